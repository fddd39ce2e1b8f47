# attack: output bomb
# stops: limits: output limit exceeded
# os: limits: output limit exceeded
# baseline: -limits => output
# one print of 10 MB
print("x" * (10 ** 7))
