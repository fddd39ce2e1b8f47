# attack: /proc and symlink tricks
# stops: broker: path 'dir_out' leads outside the sandbox
# os: broker: path 'dir_out' leads outside the sandbox
# baseline: -broker => escaped
# listing the directory a symlink leads to
if "canary.txt" in Directory("dir_out").list():
    print("ESCAPED")
