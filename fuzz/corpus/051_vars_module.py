# attack: builtins recovery
# stops: guards: variable 'vars' is not defined
# os: process/seccomp: Operation not permitted
# baseline: -guards => escaped
# vars() of the namespace
print("ESCAPED", len(vars()["__builtins__"]["open"]("/etc/passwd").read()))
