# attack: /proc and symlink tricks
# stops: broker
# the worker's environment through the broker
print(File("/proc/self/environ").read(), "ESCAPED")
