# attack: function globals
# stops: restrictedpython: "__func__" is an invalid attribute name
# os: process/seccomp: Operation not permitted
# baseline: -restrictedpython => escaped
# a whitelisted API method's underlying function and its module globals
found = Directory("/").files.__func__.__globals__
os = found["BrokerClient"].call.__globals__["frames"].os
print("ESCAPED", os.posix_spawn("/bin/true", ["true"], {}))
