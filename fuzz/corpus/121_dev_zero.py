# attack: /proc and symlink tricks
# stops: broker: no such file: dev/zero
# os: broker: no such file: dev/zero
# baseline: -broker => memory
# reading a device that never ends
print(len(File("/dev/zero").read()))
