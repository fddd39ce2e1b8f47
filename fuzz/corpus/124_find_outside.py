# attack: /proc and symlink tricks
# stops: broker: path '../' climbs above the root
# os: broker: path '../' climbs above the root
# baseline: -broker => escaped
# a glob from above the root
print(Directory("../").find("*canary*"))
