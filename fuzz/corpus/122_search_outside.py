# attack: /proc and symlink tricks
# stops: broker: path '..' climbs above the root
# os: broker: path '..' climbs above the root
# baseline: -broker => escaped
# a content search from above the root
for f in Directory("..").search("CANARY", scope="content"):
    print(f.read())
