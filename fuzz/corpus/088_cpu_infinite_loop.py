# attack: CPU bomb
# stops: limits: the script did not finish
# os: limits: the script did not finish
# baseline: -limits => outlives
# an infinite loop
while True:
    pass
