# attack: CPU bomb
# stops: limits: the script did not finish
# os: limits: the script did not finish
# baseline: -limits => outlives
# nested loops, each within the range cap: 10**12 steps
for i in inclusive_range(1, 1000000):
    for j in inclusive_range(1, 1000000):
        pass
