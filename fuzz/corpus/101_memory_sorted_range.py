# attack: memory bomb
# stops: limits
# sorted() of a huge range
print(len(sorted(inclusive_range(1, 10 ** 10))), "ESCAPED")
