# attack: CPU bomb
# stops: limits: regex search exceeded the run's time limit|the script did not finish
# os: limits: regex search exceeded the run's time limit|the script did not finish
# baseline: -broker => outlives
# a regex that backtracks exponentially on a line of the root's documents, run by the broker
print(Directory("data").search("(a|aa)+$", scope="content"))
