# attack: builtins recovery
# stops: restrictedpython
# breakpoint() to reach pdb
breakpoint()
print("ESCAPED")
