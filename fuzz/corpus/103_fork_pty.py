# attack: fork bomb
# stops: guards: __import__ not found
# os: process/seccomp: No module named 'pty'
# baseline: -guards => escaped
# pty.fork
import os, pty
pid, fd = pty.fork()
if pid == 0:
    os.kill(os.getpid(), 9)
print("ESCAPED", os.waitpid(pid, 0))
