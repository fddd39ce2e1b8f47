# attack: BaseException subclasses
# stops: limits: the script did not finish
# os: limits: the script did not finish
# baseline: +interrupt => escaped
# `return` in a finally block of a function discards the exception; the function starts over
def spin(rounds):
    if rounds == 3:
        return rounds
    try:
        while True:
            pass
    finally:
        return spin(rounds + 1)
print("ESCAPED: survived", spin(0), "interrupts")
