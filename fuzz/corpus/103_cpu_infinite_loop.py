# attack: CPU bomb
# stops: limits
# an infinite loop
while True:
    pass
