# attack: function globals
# stops: restrictedpython
# closure cells
def outer():
    secret = 1
    def inner():
        return secret
    return inner
print(outer().__closure__, "ESCAPED")
