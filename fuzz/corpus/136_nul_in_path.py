# attack: /proc and symlink tricks
# stops: broker
# a NUL byte to truncate a path
print(File("data/a.txt\x00/../../canary.txt").read(), "ESCAPED")
