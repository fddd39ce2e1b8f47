# attack: function globals
# stops: guards: variable 'getattr' is not defined
# os: process/seccomp: Operation not permitted
# baseline: -guards => escaped
# getattr(f, "__globals__") with the name built at run time, then the real builtins
def f():
    pass
found = getattr(f, "__glob" + "als__")
os = found["__builtins__"]["__import__"]("os")
print("ESCAPED", os.posix_spawn("/bin/true", ["true"], {}))
