# attack: builtins recovery
# stops: guards
# deleting an attribute
d = Directory("/")
del d.path
print("ESCAPED")
