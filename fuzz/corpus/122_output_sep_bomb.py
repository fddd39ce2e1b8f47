# attack: output bomb
# stops: limits
# a huge separator
print(1, 2, sep="x" * (10 ** 7))
print("ESCAPED")
