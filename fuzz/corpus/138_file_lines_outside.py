# attack: /proc and symlink tricks
# stops: broker
# numbered lines of a file outside
print(File("/../canary.txt").lines(), "ESCAPED")
