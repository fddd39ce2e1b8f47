# attack: builtins recovery
# stops: guards
# getattr with a name built from chr()
name = chr(95) * 2 + "class" + chr(95) * 2
print(getattr(1, name), "ESCAPED")
