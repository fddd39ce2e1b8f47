# attack: memory bomb
# stops: limits
# appending without bound
xs = []
for i in inclusive_range(1, 10 ** 12):
    xs.append("x" * 1000)
print("ESCAPED")
