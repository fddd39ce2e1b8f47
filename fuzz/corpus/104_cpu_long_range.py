# attack: CPU bomb
# stops: limits
# a loop over a huge range
for i in inclusive_range(1, 10 ** 15):
    pass
print("ESCAPED")
