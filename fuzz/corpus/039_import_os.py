# attack: builtins recovery
# stops: guards: __import__ not found
# os: process/seccomp: Operation not permitted
# baseline: -guards => escaped
# import os
import os
print("ESCAPED", os.posix_spawn("/bin/true", ["true"], {}))
