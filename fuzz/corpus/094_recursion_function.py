# attack: recursion bomb
# stops: limits: recursion too deep
# os: limits: recursion too deep
# baseline: -limits => memory
# unbounded recursion
def f(n):
    return f(n + 1)
f(0)
