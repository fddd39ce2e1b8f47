# attack: memory bomb
# stops: limits: range 1:1000000000000 has 1000000000000 items \(limit 1000000\)
# os: limits: range 1:1000000000000 has 1000000000000 items
# baseline: -limits => memory
# appending without bound
xs = []
for i in inclusive_range(1, 10 ** 12):
    xs.append("x" * 1000 + str(i))
