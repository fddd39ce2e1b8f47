# attack: memory bomb
# stops: limits: memory limit exceeded
# os: limits: memory limit exceeded
# baseline: -limits => memory
# join of a list of 10**9 references
s = "".join(["abc"] * (10 ** 9))
