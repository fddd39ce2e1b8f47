# attack: function globals
# stops: restrictedpython: "__globals__" is an invalid attribute name
# os: process/seccomp: Operation not permitted
# baseline: -restrictedpython => escaped
# a script function's __globals__ holds the guard hook, whose own globals lead to os
def f():
    pass
hook = f.__globals__["_getattr_"]
os = hook.__globals__["BrokerClient"].call.__globals__["frames"].os
print("ESCAPED", os.posix_spawn("/bin/true", ["true"], {}))
