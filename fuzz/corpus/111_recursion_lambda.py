# attack: recursion bomb
# stops: limits
# a self-applying lambda
f = lambda g: g(g)
f(f)
print("ESCAPED")
