# attack: /proc and symlink tricks
# stops: broker
# the broker's environment through a climbing path
print(File("../../../../proc/self/environ").read(), "ESCAPED")
