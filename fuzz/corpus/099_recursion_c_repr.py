# attack: recursion bomb
# stops: guards: variable 'repr' is not defined
# os: limits: recursion too deep
# baseline: -guards -limits => crash
# repr() of a deeply nested list recurses in C: without the recursion limit the stack overflows
xs = []
for i in inclusive_range(1, 100000):
    xs = [xs]
print(len(repr(xs)))
