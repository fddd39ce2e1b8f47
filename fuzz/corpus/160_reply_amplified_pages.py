# attack: memory bomb
# stops: limits: reply would exceed
# os: limits: reply would exceed
# baseline: -broker => memory
# one 80 KB page asked 10,000 times in one read(): an 800 MB reply, which the broker once encoded whole before any check
x = File("amplify/wide.txt").read(pages=[1] * 10000)
print(len(x))
