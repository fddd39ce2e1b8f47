# attack: output bomb
# stops: limits: output limit exceeded
# os: limits: output limit exceeded
# baseline: -limits => output
# printing forever
while True:
    print("spam spam spam spam spam spam spam spam spam spam")
