# attack: memory bomb
# stops: limits: memory limit exceeded
# os: limits: memory limit exceeded
# baseline: -limits => memory
# a small list repeated by reference, then each copy made real
xs = [[0] * 100000] * 100000
ys = [x + x for x in xs]
