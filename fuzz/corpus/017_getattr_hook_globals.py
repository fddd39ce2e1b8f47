# attack: function globals
# stops: restrictedpython
# the guard's own globals
print(_getattr_.__globals__, "ESCAPED")
