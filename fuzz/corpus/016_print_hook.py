# attack: function globals
# stops: restrictedpython: "_print_" is an invalid variable name
# os: process/seccomp: Operation not permitted
# baseline: -restrictedpython => escaped
# RestrictedPython's print hook object, named directly
client = _print_.builtins.client
os = client.call.__globals__["frames"].os
print("ESCAPED", os.posix_spawn("/bin/true", ["true"], {}))
