# attack: CPU bomb
# stops: limits: regex search exceeded the run's time limit|the script did not finish
# os: limits: regex search exceeded the run's time limit|the script did not finish
# baseline: -broker => outlives
# the exponential regex behind a lookahead, which RE2 cannot run: the deadline-guarded fallback must stop it
print(Directory("data").search("(?=a)(a|aa)+$", scope="content"))
