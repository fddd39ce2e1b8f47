# attack: recursion bomb
# stops: limits
# recursion that catches its own RecursionError
def f():
    try:
        f()
    except:
        f()
f()
print("ESCAPED")
