# attack: /proc and symlink tricks
# stops: guards: __import__ not found
# os: process/seccomp: Operation not permitted
# baseline: -guards => escaped
# a SysV shared memory segment made where every process of the host can attach it (and where it stays pinned after the run)
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
shmid = libc.shmget(0, 1 << 20, 0o1000 | 0o666)
if shmid < 0:
    raise OSError(ctypes.get_errno(), "shmget: " + os.strerror(ctypes.get_errno()))
print("ESCAPED: segment", shmid)
libc.shmctl(shmid, 0, None)
