# attack: function globals
# stops: restrictedpython
# f.__code__ to build a new function
def f():
    pass
print(f.__code__.co_consts, "ESCAPED")
