# attack: builtins recovery
# stops: restrictedpython
# the __builtins__ name
print(__builtins__["open"], "ESCAPED")
