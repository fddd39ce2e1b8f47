# attack: builtins recovery
# stops: guards: variable 'locals' is not defined
# os: process/seccomp: Operation not permitted
# baseline: -guards => escaped
# locals() at module level is the namespace
print("ESCAPED", len(locals()["__builtins__"]["open"]("/etc/passwd").read()))
