# attack: subclass walk
# stops: guards: variable 'object' is not defined
# os: process/seccomp: Operation not permitted
# baseline: -guards => escaped
# the name object as the root of the walk
root = object
for c in vars(type)["__subclasses__"](root):
    if "os._wrap_close" in repr(c):
        found = getattr(vars(c)["__init__"], "__glo" + "bals__")
        print("ESCAPED", found["posix_spawn"]("/bin/true", ["true"], {}))
