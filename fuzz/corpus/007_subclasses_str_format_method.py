# attack: subclass walk
# stops: guards
# str.format is not whitelisted
print("{}".format(1), "ESCAPED")
