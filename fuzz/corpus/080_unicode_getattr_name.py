# attack: look-alike unicode identifiers
# stops: restrictedpython
# a look-alike of _getattr_
print(＿getattr＿, "ESCAPED")
