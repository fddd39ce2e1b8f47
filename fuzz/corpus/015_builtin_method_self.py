# attack: function globals
# stops: restrictedpython
# __self__ of a builtin method
print(len.__self__, "ESCAPED")
