# attack: CPU bomb
# stops: limits: the script did not finish|time limit
# os: limits: the script did not finish|time limit
# baseline: -broker => outlives
# the table of contents of a document whose lines made the TOC patterns backtrack cubically, again and again
while True:
    File("data/toc_bomb.txt").table()
