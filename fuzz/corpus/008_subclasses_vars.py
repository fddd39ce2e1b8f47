# attack: subclass walk
# stops: guards
# vars() of a value
print(vars(1), "ESCAPED")
