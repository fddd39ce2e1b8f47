# attack: memory bomb
# stops: limits
# a huge integer power
n = 10 ** (10 ** 10)
print("ESCAPED")
