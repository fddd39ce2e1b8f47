# attack: fork bomb
# stops: guards: __import__ not found
# os: process/seccomp: Operation not permitted
# baseline: -guards => escaped
# os.fork (once: one new process proves the bomb)
import os
pid = os.fork()
if pid == 0:
    os.kill(os.getpid(), 9)
print("ESCAPED", os.waitpid(pid, 0))
