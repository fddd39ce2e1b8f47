# attack: /proc and symlink tricks
# stops: broker
# a content search from outside the root
print(Directory("..").search("CANARY", scope="content"), "ESCAPED")
