# attack: /proc and symlink tricks
# stops: broker: climbs above the root
# os: broker: climbs above the root
# baseline: -broker => escaped
# climbing from the root to /proc
if "Pid:" in File("../../../../../../../../../../proc/self/status").read():
    print("ESCAPED")
