# attack: builtins recovery
# stops: restrictedpython
# eval of source text
print(eval("1+1"), "ESCAPED")
