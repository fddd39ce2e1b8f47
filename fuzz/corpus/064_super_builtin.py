# attack: builtins recovery
# stops: guards
# super() outside a class
print(super(), "ESCAPED")
