# attack: recursion bomb
# stops: limits: recursion too deep
# os: limits: recursion too deep
# baseline: -limits => memory
# a self-applying lambda
f = lambda g: g(g)
f(f)
