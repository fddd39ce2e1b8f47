# attack: /proc and symlink tricks
# stops: broker
# a glob climbing out of the root
outside = Directory("/").find("../*")
if len(outside) > 0:
    print("ESCAPED")
print(Directory("..").find("*"), "ESCAPED")
