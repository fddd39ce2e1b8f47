# attack: /proc and symlink tricks
# stops: broker
# a symlink in the root pointing outside
print(File("link_out").read(), "ESCAPED")
