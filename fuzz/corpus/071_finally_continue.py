# attack: BaseException subclasses
# stops: limits: the script did not finish
# os: limits: the script did not finish
# baseline: +interrupt => escaped
# `continue` in a finally block discards any exception, without naming a class
survived = 0
while survived < 3:
    try:
        while True:
            pass
    finally:
        survived = survived + 1
        continue
print("ESCAPED: survived", survived, "interrupts")
