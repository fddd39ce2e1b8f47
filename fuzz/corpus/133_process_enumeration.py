# attack: /proc and symlink tricks
# stops: guards: __import__ not found
# os: process/seccomp: Operation not permitted
# baseline: -guards => escaped
# the host's processes enumerated by their process-group ids, pid after pid
import os
seen = 0
for pid in range(1, 5000):
    try:
        os.getpgid(pid)
        seen = seen + 1
    except ProcessLookupError:
        pass
if seen > 1:
    print("ESCAPED:", seen, "processes")
