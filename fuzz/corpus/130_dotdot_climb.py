# attack: /proc and symlink tricks
# stops: broker
# climbing with ..
print(File("../canary.txt").read(), "ESCAPED")
