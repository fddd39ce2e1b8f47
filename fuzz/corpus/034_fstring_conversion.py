# attack: format-string attribute access
# stops: restrictedpython
# an f-string with a !r conversion of an API object
d = Directory("/")
s = f"{d!r}"
print(s.__len__, "ESCAPED")
