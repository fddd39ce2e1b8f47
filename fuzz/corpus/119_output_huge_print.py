# attack: output bomb
# stops: limits
# one huge print
print("x" * (10 ** 7))
print("ESCAPED")
