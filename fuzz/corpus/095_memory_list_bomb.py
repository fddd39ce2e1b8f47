# attack: memory bomb
# stops: limits
# a huge list
xs = [0] * (10 ** 10)
print("ESCAPED")
