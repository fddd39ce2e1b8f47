# attack: /proc and symlink tricks
# stops: broker: path 'data/../../canary.txt' climbs above the root
# os: broker: path 'data/../../canary.txt' climbs above the root
# baseline: -broker => escaped
# climbing after a real directory
print(File("data/../../canary.txt").read())
