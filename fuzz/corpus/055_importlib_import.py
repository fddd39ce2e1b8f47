# attack: loader and module tricks
# stops: guards: __import__ not found
# os: process/seccomp: Operation not permitted
# baseline: -guards => escaped
# importlib.import_module
import importlib
os = importlib.import_module("os")
print("ESCAPED", os.posix_spawn("/bin/true", ["true"], {}))
