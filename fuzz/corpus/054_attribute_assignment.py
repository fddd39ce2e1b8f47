# attack: builtins recovery
# stops: restrictedpython
# assigning to a private attribute
d = Directory("/")
d._path = "/etc"
print("ESCAPED")
