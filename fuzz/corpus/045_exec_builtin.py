# attack: builtins recovery
# stops: restrictedpython
# exec of source text
exec("print(1)")
print("ESCAPED")
