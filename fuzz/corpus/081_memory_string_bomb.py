# attack: memory bomb
# stops: limits: memory limit exceeded
# os: limits: memory limit exceeded
# baseline: -limits => memory
# a string of 10**10 characters
s = "x" * (10 ** 10)
