# attack: generator/coroutine/traceback frames
# stops: restrictedpython: "__traceback__" is an invalid attribute name
# os: process/seccomp: Operation not permitted
# baseline: -restrictedpython -guards => escaped
# tb_frame of a caught exception, then up the stack
try:
    1 / 0
except ZeroDivisionError as e:
    frame = e.__traceback__.tb_frame
    while frame is not None and "os" not in frame.f_globals:
        frame = frame.f_back
    print("ESCAPED", frame.f_globals["os"].posix_spawn("/bin/true", ["true"], {}))
