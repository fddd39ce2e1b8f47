# attack: subclass walk
# stops: restrictedpython: "__class__" is an invalid attribute name
# os: process/seccomp: Operation not permitted
# baseline: -restrictedpython => escaped
# ().__class__.__bases__[0].__subclasses__() to os._wrap_close, whose __init__'s globals are the os module
for c in ().__class__.__bases__[0].__subclasses__():
    if c.__name__ == "_wrap_close":
        spawn = c.__init__.__globals__["posix_spawn"]
        print("ESCAPED", spawn("/bin/true", ["true"], {}))
