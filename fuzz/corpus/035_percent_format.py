# attack: format-string attribute access
# stops: guards
# %-formatting through a mapping
print("%(a)s" % {"a": Directory("/").client}, "ESCAPED")
