# attack: function globals
# stops: restrictedpython
# a function's __globals__
def f():
    pass
print(f.__globals__, "ESCAPED")
