# attack: output bomb
# stops: limits: output limit exceeded
# os: limits: output limit exceeded
# baseline: -limits => output
# printing a document again and again
f = File("data/a.txt")
while True:
    print(f.read())
