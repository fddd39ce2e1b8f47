# attack: BaseException subclasses
# stops: guards: cannot iterate over value
# os: limits: the script did not finish
# baseline: -guards +interrupt => escaped
# a generator whose finally swallows what is thrown into it (an interrupt, GeneratorExit) and goes on
def spin():
    while True:
        try:
            while True:
                yield 1
        finally:
            print("ESCAPED: survived the interrupt")
            continue
for x in spin():
    pass
