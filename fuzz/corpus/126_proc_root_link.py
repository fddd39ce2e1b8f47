# attack: /proc and symlink tricks
# stops: broker
# /proc/self/root
print(Directory("/proc/self/root/etc").files(), "ESCAPED")
