# attack: /proc and symlink tricks
# stops: broker: path 'abs_out' leads outside the sandbox
# os: broker: path 'abs_out' leads outside the sandbox
# baseline: -broker => escaped
# an absolute symlink to the canary
print(File("abs_out").read())
