# attack: CPU bomb
# stops: limits
# a catastrophic regex sent to the broker's search
d = Directory("/")
print(d.search("(a+)+$", scope="content"))
while True:
    pass
