# attack: BaseException subclasses
# stops: guards: variable 'ZeroDivisionError' is not defined
# os: process/seccomp: Operation not permitted
# baseline: -guards => escaped
# type(e) of a caught error to its class hierarchy and on to object's subclasses
try:
    1 / 0
except ZeroDivisionError as e:
    for c in vars(type)["__subclasses__"](type(e).mro()[-1]):
        if "os._wrap_close" in repr(c):
            found = getattr(vars(c)["__init__"], "__glo" + "bals__")
            print("ESCAPED", found["posix_spawn"]("/bin/true", ["true"], {}))
