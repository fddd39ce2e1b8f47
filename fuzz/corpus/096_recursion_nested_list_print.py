# attack: recursion bomb
# stops: limits: recursion too deep
# os: limits: recursion too deep
# baseline: -limits => crash
# printing a list nested 200000 deep (rendered recursively: without the limit the C stack overflows)
xs = []
for i in inclusive_range(1, 200000):
    xs = [xs]
print(xs)
