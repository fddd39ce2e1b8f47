# attack: memory bomb
# stops: limits
# nested list multiplication
xs = [[0] * 100000] * 100000
ys = [x + x for x in xs]
print("ESCAPED")
