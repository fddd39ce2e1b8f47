# attack: subclass walk
# stops: guards
# type(()) to reach object
t = type(())
print(t.mro(), "ESCAPED")
