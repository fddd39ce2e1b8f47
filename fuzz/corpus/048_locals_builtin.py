# attack: builtins recovery
# stops: guards
# locals()
print(locals(), "ESCAPED")
