# attack: builtins recovery
# stops: restrictedpython: "builtins" is a reserved name
# os: process/rlimits: Too many open files
# baseline: -restrictedpython -guards => escaped
# import builtins
import builtins
print("ESCAPED", len(builtins.open("/etc/passwd").read()))
