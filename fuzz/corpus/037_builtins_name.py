# attack: builtins recovery
# stops: restrictedpython: "__builtins__" is an invalid variable name
# os: process/seccomp: Operation not permitted
# baseline: -restrictedpython -guards => escaped
# the __builtins__ name of the module
print("ESCAPED", len(__builtins__["open"]("/etc/passwd").read()))
