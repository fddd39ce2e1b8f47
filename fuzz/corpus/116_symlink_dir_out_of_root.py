# attack: /proc and symlink tricks
# stops: broker: path 'dir_out/canary.txt' leads outside the sandbox
# os: broker: path 'dir_out/canary.txt' leads outside the sandbox
# baseline: -broker => escaped
# a directory symlink pointing outside
print(File("dir_out/canary.txt").read())
