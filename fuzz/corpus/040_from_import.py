# attack: builtins recovery
# stops: guards: __import__ not found
# os: process/seccomp: Operation not permitted
# baseline: -guards => escaped
# from os import posix_spawn
from os import posix_spawn
print("ESCAPED", posix_spawn("/bin/true", ["true"], {}))
