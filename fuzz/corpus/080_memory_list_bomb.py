# attack: memory bomb
# stops: limits: memory limit exceeded
# os: limits: memory limit exceeded
# baseline: -limits => memory
# a list of 10**10 items
xs = [0] * (10 ** 10)
