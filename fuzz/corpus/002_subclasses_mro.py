# attack: subclass walk
# stops: restrictedpython
# ''.__class__.__mro__[1].__subclasses__()
print(''.__class__.__mro__[1].__subclasses__(), "ESCAPED")
