# attack: output bomb
# stops: limits
# printing forever
while True:
    print("spam spam spam spam spam spam spam spam spam spam")
