# attack: output bomb
# stops: limits: output limit exceeded
# os: limits: output limit exceeded
# baseline: -limits => output
# a huge separator
print(1, 2, sep="x" * (10 ** 7))
