# attack: look-alike unicode identifiers
# stops: restrictedpython
# a look-alike of __builtins__
print(＿＿builtins＿＿, "ESCAPED")
