# attack: subclass walk
# stops: restrictedpython: "__class__" is an invalid attribute name
# os: process/seccomp: Operation not permitted
# baseline: -restrictedpython => escaped
# the class of a record the API returned (a listing entry), up to object and down to os._wrap_close
entry = Directory("/").list()[0]
for c in entry.__class__.__mro__[-1].__subclasses__():
    if c.__name__ == "_wrap_close":
        print("ESCAPED", c.__init__.__globals__["posix_spawn"]("/bin/true", ["true"], {}))
