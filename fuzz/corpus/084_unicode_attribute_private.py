# attack: look-alike unicode identifiers
# stops: restrictedpython
# a look-alike underscore attribute of an API object
print(Directory("/").＿path, "ESCAPED")
