# attack: memory bomb
# stops: limits: memory limit exceeded
# os: limits: memory limit exceeded
# baseline: -limits => memory
# doubling a string in a loop
s = "x"
for i in inclusive_range(1, 64):
    s = s + s
