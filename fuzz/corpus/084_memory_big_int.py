# attack: memory bomb
# stops: limits: memory limit exceeded
# os: limits: memory limit exceeded
# baseline: -limits => memory
# an integer of 8 * 10**9 bits
n = 1 << (8 * 10 ** 9)
