# attack: CPU bomb
# stops: limits: Exceeds the limit \(4300 digits\) for integer string conversion
# os: limits: Exceeds the limit \(4300 digits\) for integer string conversion
# baseline: -limits => outlives
# int-to-string conversion of a 3-million-digit number (quadratic time)
print(len(str(2 ** 10000000)))
