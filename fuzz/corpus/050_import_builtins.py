# attack: builtins recovery
# stops: restrictedpython: "builtins" is a reserved name
# os: process/seccomp: Operation not permitted
# baseline: -restrictedpython -guards => escaped
# import builtins
import builtins
print("ESCAPED", len(builtins.open("/etc/passwd").read()))
