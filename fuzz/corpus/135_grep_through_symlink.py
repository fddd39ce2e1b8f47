# attack: /proc and symlink tricks
# stops: broker
# grep through a directory symlink
print(Directory("dir_out").grep("CANARY"), "ESCAPED")
