# attack: function globals
# stops: restrictedpython: "_getattr_" is an invalid variable name
# os: process/seccomp: Operation not permitted
# baseline: -restrictedpython => escaped
# the attribute guard's own globals
os = _getattr_.__globals__["BrokerClient"].call.__globals__["frames"].os
print("ESCAPED", os.posix_spawn("/bin/true", ["true"], {}))
