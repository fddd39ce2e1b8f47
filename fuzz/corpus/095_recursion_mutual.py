# attack: recursion bomb
# stops: limits: recursion too deep
# os: limits: recursion too deep
# baseline: -limits => memory
# mutual recursion
def a(n):
    return b(n + 1)
def b(n):
    return a(n + 1)
a(0)
