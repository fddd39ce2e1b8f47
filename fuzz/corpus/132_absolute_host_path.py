# attack: /proc and symlink tricks
# stops: broker
# a host absolute path
print(File("/etc/passwd").read(), "ESCAPED")
