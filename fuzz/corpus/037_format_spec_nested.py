# attack: format-string attribute access
# stops: guards
# a nested format spec
print(format(1, "{0.__class__}"), "ESCAPED")
