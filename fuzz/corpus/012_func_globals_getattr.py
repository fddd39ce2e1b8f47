# attack: function globals
# stops: guards
# getattr(f, '__globals__')
def f():
    pass
print(getattr(f, "__glob" + "als__"), "ESCAPED")
