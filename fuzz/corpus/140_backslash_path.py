# attack: /proc and symlink tricks
# stops: broker
# backslash separators
print(File("..\\canary.txt").read(), "ESCAPED")
