# attack: format-string attribute access
# stops: guards
# '{0.__class__}'.format(x)
print("{0.__class__.__mro__}".format(1), "ESCAPED")
