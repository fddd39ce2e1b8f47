# attack: /proc and symlink tricks
# stops: broker
# a directory symlink pointing outside
print(File("dir_out/canary.txt").read(), "ESCAPED")
