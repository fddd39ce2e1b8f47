# attack: subclass walk
# stops: guards
# a non-whitelisted attribute of a list
xs = [1]
print(xs.copy, "ESCAPED")
