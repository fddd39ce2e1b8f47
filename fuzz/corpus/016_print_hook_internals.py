# attack: function globals
# stops: restrictedpython
# the print hook's object
print(_print_, "ESCAPED")
