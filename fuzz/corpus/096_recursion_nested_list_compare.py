# attack: recursion bomb
# stops: limits: recursion too deep
# os: limits: recursion too deep
# baseline: -limits => crash
# comparing two lists nested 200000 deep (compared recursively in C: without the limit the C stack overflows)
xs = []
ys = []
for i in inclusive_range(1, 200000):
    xs = [xs]
    ys = [ys]
print(xs == ys)
