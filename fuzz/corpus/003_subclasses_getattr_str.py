# attack: subclass walk
# stops: guards
# getattr with a computed dunder name
x = getattr((), "__cl" + "ass__")
print(x, "ESCAPED")
