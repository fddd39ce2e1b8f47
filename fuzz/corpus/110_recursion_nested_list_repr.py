# attack: recursion bomb
# stops: limits
# printing a deeply nested list
xs = []
for i in inclusive_range(1, 200000):
    xs = [xs]
print(xs, "ESCAPED")
