# attack: /proc and symlink tricks
# stops: broker
# climbing after a real directory
print(File("data/../../canary.txt").read(), "ESCAPED")
