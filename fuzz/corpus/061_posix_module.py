# attack: loader and module tricks
# stops: guards: __import__ not found
# os: process/seccomp: Operation not permitted
# baseline: -guards => escaped
# the built-in posix module (no file to open: importable even under Landlock)
import posix
pid = posix.fork()
if pid == 0:
    posix.kill(posix.getpid(), 9)
print("ESCAPED", posix.waitpid(pid, 0))
