# attack: builtins recovery
# stops: guards
# dict() and its methods
d = dict(a=1)
print(d.keys(), "ESCAPED")
