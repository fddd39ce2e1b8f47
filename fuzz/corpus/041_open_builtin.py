# attack: builtins recovery
# stops: guards: variable 'open' is not defined
# os: process/rlimits: Too many open files
# baseline: -guards => escaped
# open() of a host file
print("ESCAPED", len(open("/etc/passwd").read()))
