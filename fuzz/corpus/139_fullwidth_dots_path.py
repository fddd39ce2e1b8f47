# attack: /proc and symlink tricks
# stops: broker
# fullwidth dots as a path component
print(File("．．/canary.txt").read(), "ESCAPED")
