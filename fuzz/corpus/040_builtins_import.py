# attack: builtins recovery
# stops: restrictedpython
# __import__('os')
__import__("os").system("id")
print("ESCAPED")
