# attack: /proc and symlink tricks
# stops: broker: path 'link_out' leads outside the sandbox
# os: broker: path 'link_out' leads outside the sandbox
# baseline: -broker => escaped
# a symlink in the root pointing outside it (at the canary)
print(File("link_out").read())
