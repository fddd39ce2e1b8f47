# attack: loader and module tricks
# stops: guards: __import__ not found
# os: process/seccomp: Operation not permitted
# baseline: -guards => escaped
# sys.modules["os"]
import sys
print("ESCAPED", sys.modules["os"].posix_spawn("/bin/true", ["true"], {}))
