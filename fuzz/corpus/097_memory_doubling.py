# attack: memory bomb
# stops: limits
# doubling a string in a loop
s = "x"
for i in inclusive_range(1, 64):
    s = s + s
print("ESCAPED")
