# attack: /proc and symlink tricks
# stops: broker
# a device file
print(File("/dev/zero").read(), "ESCAPED")
