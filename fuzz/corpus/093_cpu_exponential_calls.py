# attack: CPU bomb
# stops: limits: the script did not finish
# os: limits: the script did not finish
# baseline: -limits => outlives
# exponential recursion that stays shallow: 2**60 calls
def f(n):
    if n == 0:
        return 1
    return f(n - 1) + f(n - 1)
print(f(60))
