# attack: subclass walk
# stops: guards
# dir() to enumerate attributes
print(dir(()), "ESCAPED")
