# attack: CPU bomb
# stops: limits: range 1:1000000000000000 has 1000000000000000 items \(limit 1000000\)
# os: limits: range 1:1000000000000000 has 1000000000000000 items
# baseline: -limits => memory
# a loop over 10**15 numbers
for i in inclusive_range(1, 10 ** 15):
    pass
