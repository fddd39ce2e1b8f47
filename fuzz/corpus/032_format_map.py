# attack: format-string attribute access
# stops: guards
# str.format_map with a dict
print("{a.__class__}".format_map({"a": 1}), "ESCAPED")
