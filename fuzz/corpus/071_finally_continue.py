# attack: BaseException subclasses
# stops: limits: the script did not finish
# os: limits: the script did not finish
# baseline: +interrupt => escaped
# `continue` in a finally block discards any exception, without naming a class
while True:
    try:
        while True:
            pass
    finally:
        print("ESCAPED: survived the interrupt")
        continue
