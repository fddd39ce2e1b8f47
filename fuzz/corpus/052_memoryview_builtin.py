# attack: builtins recovery
# stops: guards
# memoryview for raw memory
print(memoryview(b"x"), "ESCAPED")
