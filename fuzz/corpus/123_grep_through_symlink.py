# attack: /proc and symlink tricks
# stops: broker: path 'dir_out' leads outside the sandbox
# os: broker: path 'dir_out' leads outside the sandbox
# baseline: -broker => escaped
# grep through a directory symlink
print(Directory("dir_out").grep("CANARY"))
