# attack: builtins recovery
# stops: guards
# globals()
print(globals(), "ESCAPED")
