# attack: /proc and symlink tricks
# stops: broker: no such file: proc/self/status
# os: broker: no such file: proc/self/status
# baseline: -broker => escaped
# an absolute host path into /proc
if "Pid:" in File("/proc/self/status").read():
    print("ESCAPED")
