# attack: memory bomb
# stops: limits
# a huge string
s = "x" * (10 ** 10)
print("ESCAPED")
