# attack: memory bomb
# stops: limits: range 1:10000000000 has 10000000000 items \(limit 1000000\)
# os: limits: range 1:10000000000 has 10000000000 items
# baseline: -limits => memory
# sorted() of a huge range
print(len(sorted(inclusive_range(1, 10 ** 10))))
