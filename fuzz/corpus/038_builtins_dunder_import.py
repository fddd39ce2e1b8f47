# attack: builtins recovery
# stops: restrictedpython: "__import__" is an invalid variable name
# os: process/seccomp: Operation not permitted
# baseline: -restrictedpython -guards => escaped
# __import__("os")
print("ESCAPED", __import__("os").posix_spawn("/bin/true", ["true"], {}))
