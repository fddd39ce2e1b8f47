# attack: builtins recovery
# stops: guards
# chr() to build names
print(chr(95) * 2 + "class" + chr(95) * 2, "ESCAPED")
