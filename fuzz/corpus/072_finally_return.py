# attack: BaseException subclasses
# stops: limits: the script did not finish
# os: limits: the script did not finish
# baseline: +interrupt => escaped
# `return` in a finally block of a function discards the exception; the function starts over
def spin(rounds):
    try:
        while True:
            pass
    finally:
        print("ESCAPED: survived the interrupt")
        return spin(rounds + 1)
spin(0)
