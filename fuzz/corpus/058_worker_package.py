# attack: loader and module tricks
# stops: guards: __import__ not found
# os: process/seccomp: Operation not permitted
# baseline: -guards => escaped
# the worker's own protocol module and its os
import wire.protocol
print("ESCAPED", wire.protocol.os.posix_spawn("/bin/true", ["true"], {}))
