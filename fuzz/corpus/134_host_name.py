# attack: /proc and symlink tricks
# stops: guards: __import__ not found
# os: process/seccomp: Operation not permitted
# baseline: -guards => escaped
# the host's name and kernel
import os
print("ESCAPED:", os.uname().nodename, os.uname().release)
