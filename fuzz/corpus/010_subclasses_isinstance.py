# attack: subclass walk
# stops: guards
# isinstance/issubclass probing
print(issubclass(bool, int), "ESCAPED")
