# attack: CPU bomb
# stops: guards
# int-to-string conversion of a huge number (Python 3.11's digit limit refuses it)
print(str(2 ** 10000000), "ESCAPED")
