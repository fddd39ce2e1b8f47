# attack: builtins recovery
# stops: guards
# item assignment into a list (write guard)
xs = [1]
xs[0] = 2
print("ESCAPED")
