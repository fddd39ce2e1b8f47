# attack: function globals
# stops: restrictedpython: "_client" is an invalid attribute name
# os: process/seccomp: Operation not permitted
# baseline: -restrictedpython => escaped
# a proxy's private broker client
client = Directory("/")._client
os = client.call.__globals__["frames"].os
print("ESCAPED", os.posix_spawn("/bin/true", ["true"], {}))
