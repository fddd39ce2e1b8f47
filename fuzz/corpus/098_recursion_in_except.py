# attack: recursion bomb
# stops: limits: the script did not finish
# os: limits: the script did not finish
# baseline: -limits => memory
# recursion that catches its own RecursionError and recurses again: exponential
def f():
    try:
        f()
    except:
        f()
f()
