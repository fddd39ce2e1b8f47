# attack: memory bomb
# stops: limits
# join of a huge repeated list
s = "".join(["abc"] * (10 ** 9))
print("ESCAPED")
