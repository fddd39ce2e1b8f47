# attack: CPU bomb
# stops: limits: the script did not finish|time limit
# os: limits: the script did not finish|time limit
# baseline: -broker => outlives
# a regex that backtracks exponentially on a line of the root's documents, run by the broker again and again
while True:
    Directory("data").search("(a|aa)+$", scope="content")
