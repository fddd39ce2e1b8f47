# attack: generator/coroutine/traceback frames
# stops: restrictedpython: "_getframe" is an invalid attribute name
# os: process/seccomp: Operation not permitted
# baseline: -restrictedpython -guards => escaped
# sys._getframe, then up the stack
import sys
frame = sys._getframe(0)
while frame is not None and "os" not in frame.f_globals:
    frame = frame.f_back
print("ESCAPED", frame.f_globals["os"].posix_spawn("/bin/true", ["true"], {}))
