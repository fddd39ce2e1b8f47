# attack: look-alike unicode identifiers
# stops: restrictedpython
# a look-alike of eval
print(𝐞val("1"), "ESCAPED")
