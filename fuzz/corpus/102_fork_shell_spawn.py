# attack: fork bomb
# stops: guards: __import__ not found
# os: process/seccomp: Operation not permitted
# baseline: -guards => escaped
# a shell through posix_spawn
import os
pid = os.posix_spawn("/bin/sh", ["sh", "-c", "exit 0"], {})
print("ESCAPED", os.waitpid(pid, 0))
