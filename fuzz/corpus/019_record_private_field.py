# attack: function globals
# stops: restrictedpython
# a record's private storage
for e in Directory("/").list():
    print(e._data, "ESCAPED")
