# attack: output bomb
# stops: limits
# printing a document again and again
f = File("data/a.txt")
while True:
    print(f.read())
