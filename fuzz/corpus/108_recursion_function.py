# attack: recursion bomb
# stops: limits
# unbounded recursion
def f(n):
    return f(n + 1)
f(0)
print("ESCAPED")
