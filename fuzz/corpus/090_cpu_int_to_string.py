# attack: CPU bomb
# stops: limits: a number of more than 4300 digits cannot be turned into text
# os: limits: a number of more than 4300 digits cannot be turned into text
# baseline: -limits => outlives
# int-to-string conversion of a 3-million-digit number (quadratic time)
print(len(str(2 ** 10000000)))
