# attack: builtins recovery
# stops: guards
# compile() to build code
print(compile("1", "x", "eval"), "ESCAPED")
