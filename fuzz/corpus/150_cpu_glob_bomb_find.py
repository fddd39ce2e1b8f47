# attack: CPU bomb
# stops: limits: the script did not finish|time limit
# os: limits: the script did not finish|time limit
# baseline: -broker => outlives
# a glob of 40 "**" before a letter no path has (exponential for a backtracking translation), in find() again and again
bomb = "**" * 40 + "Z"
while True:
    Directory("data").find(bomb)
