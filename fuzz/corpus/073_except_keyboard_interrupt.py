# attack: BaseException subclasses
# stops: limits: the script did not finish
# os: limits: the script did not finish
# baseline: -guards +interrupt => escaped
# catching KeyboardInterrupt by name (evaluated only when something is raised)
survived = 0
while survived < 3:
    try:
        while True:
            pass
    except KeyboardInterrupt:
        survived = survived + 1
print("ESCAPED: survived", survived, "interrupts")
