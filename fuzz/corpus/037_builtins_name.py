# attack: builtins recovery
# stops: restrictedpython: "__builtins__" is an invalid variable name
# os: process/rlimits: Too many open files
# baseline: -restrictedpython -guards => escaped
# the __builtins__ name of the module
print("ESCAPED", len(__builtins__["open"]("/etc/passwd").read()))
