# attack: /proc and symlink tricks
# stops: broker: path '../canary.txt' climbs above the root
# os: broker: path '../canary.txt' climbs above the root
# baseline: -broker => escaped
# climbing with ..
print(File("../canary.txt").read())
