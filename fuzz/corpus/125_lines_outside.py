# attack: /proc and symlink tricks
# stops: broker: path '../canary.txt' climbs above the root
# os: broker: path '../canary.txt' climbs above the root
# baseline: -broker => escaped
# numbered lines of a file outside
print(File("../canary.txt").lines())
