# attack: fork bomb
# stops: guards: __import__ not found
# os: process/seccomp: Operation not permitted
# baseline: -guards => escaped
# libc's fork() through ctypes, past Python's os module
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
pid = libc.fork()
if pid < 0:
    raise OSError(ctypes.get_errno(), "fork: " + os.strerror(ctypes.get_errno()))
if pid == 0:
    os.kill(os.getpid(), 9)
print("ESCAPED", os.waitpid(pid, 0))
