# attack: builtins recovery
# stops: restrictedpython
# a lambda's __defaults__
f = lambda x=1: x
print(f.__defaults__, "ESCAPED")
