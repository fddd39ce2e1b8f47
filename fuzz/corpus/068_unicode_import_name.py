# attack: look-alike unicode identifiers
# stops: guards: __import__ not found
# os: process/seccomp: Operation not permitted
# baseline: -guards => escaped
# import 𝗈s: the module name is normalized too
import 𝗈s
print("ESCAPED", 𝗈s.posix_spawn("/bin/true", ["true"], {}))
