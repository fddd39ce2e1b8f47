# attack: builtins recovery
# stops: guards
# input() to read the pipe
print(input(), "ESCAPED")
