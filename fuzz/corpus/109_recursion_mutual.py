# attack: recursion bomb
# stops: limits
# mutual recursion
def a(n):
    return b(n)
def b(n):
    return a(n)
a(0)
print("ESCAPED")
