# attack: builtins recovery
# stops: guards: variable 'open' is not defined
# os: process/seccomp: Operation not permitted
# baseline: -guards => escaped
# open() of a host file
print("ESCAPED", len(open("/etc/passwd").read()))
