# attack: builtins recovery
# stops: guards
# open() of a host file
print(open("/etc/passwd").read(), "ESCAPED")
