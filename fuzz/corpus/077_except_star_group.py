# attack: BaseException subclasses
# stops: restrictedpython: TryStar statements are not allowed
# os: process/seccomp: Operation not permitted
# baseline: -restrictedpython -guards => escaped
# except* (exception groups, unknown to older checkers): the group's traceback frame
try:
    raise ExceptionGroup("x", [ZeroDivisionError()])
except* ZeroDivisionError as group:
    frame = group.__traceback__.tb_frame
    while frame is not None and "os" not in frame.f_globals:
        frame = frame.f_back
    print("ESCAPED", frame.f_globals["os"].posix_spawn("/bin/true", ["true"], {}))
