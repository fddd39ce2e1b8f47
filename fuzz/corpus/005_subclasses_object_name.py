# attack: subclass walk
# stops: guards
# the name object and its subclasses
print(object.mro(), "ESCAPED")
