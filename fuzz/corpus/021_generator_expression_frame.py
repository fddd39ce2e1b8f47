# attack: generator/coroutine/traceback frames
# stops: restrictedpython: "gi_frame" is a restricted name
# os: process/seccomp: Operation not permitted
# baseline: -restrictedpython => escaped
# a generator expression's frame and its f_globals (the script's namespace, with the hooks)
found = (x for x in [1]).gi_frame.f_globals
os = found["_getattr_"].__globals__["BrokerClient"].call.__globals__["frames"].os
print("ESCAPED", os.posix_spawn("/bin/true", ["true"], {}))
