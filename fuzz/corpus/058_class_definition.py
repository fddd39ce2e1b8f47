# attack: builtins recovery
# stops: guards
# a class statement (needs __build_class__ / __metaclass__)
class A:
    pass
print(A, "ESCAPED")
