# attack: /proc and symlink tricks
# stops: guards: __import__ not found
# os: process/seccomp: Operation not permitted
# baseline: -guards => escaped
# the broker's environment in /proc/<parent>/environ, after closing stderr to free a descriptor
import os
os.close(2)
with open("/proc/%d/environ" % os.getppid(), "rb") as environ:
    print("ESCAPED", environ.read().count(b"="), "variables")
