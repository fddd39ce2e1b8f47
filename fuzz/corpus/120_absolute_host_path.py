# attack: /proc and symlink tricks
# stops: broker: no such file: etc/passwd
# os: broker: no such file: etc/passwd
# baseline: -broker => escaped
# a host absolute path
if "root:" in File("/etc/passwd").read():
    print("ESCAPED")
