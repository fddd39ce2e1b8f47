# attack: loader and module tricks
# stops: guards: __import__ not found
# os: process/seccomp: Operation not permitted
# baseline: -guards => escaped
# ctypes (already loaded in the worker): libc's socket(), past Python's own checks
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.socket(2, 1, 0)
if fd < 0:
    raise OSError(ctypes.get_errno(), "socket: " + os.strerror(ctypes.get_errno()))
print("ESCAPED", fd)
