# attack: BaseException subclasses
# stops: guards: cannot iterate over value
# os: limits: the script did not finish
# baseline: -guards +interrupt => escaped
# a generator whose finally swallows what is raised into it (an interrupt, GeneratorExit) and goes on
def spin():
    survived = 0
    while survived < 3:
        try:
            while True:
                pass
        finally:
            survived = survived + 1
            continue
    yield survived
for count in spin():
    print("ESCAPED: survived", count, "interrupts")
