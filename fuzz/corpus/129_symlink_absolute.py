# attack: /proc and symlink tricks
# stops: broker
# an absolute symlink to the canary
print(File("abs_out").read(), "ESCAPED")
