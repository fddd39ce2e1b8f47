# attack: /proc and symlink tricks
# stops: broker: no such file: proc/self/root/etc/passwd
# os: broker: no such file: proc/self/root/etc/passwd
# baseline: -broker => escaped
# /proc/self/root, the process's view of /
if "root:" in File("/proc/self/root/etc/passwd").read():
    print("ESCAPED")
