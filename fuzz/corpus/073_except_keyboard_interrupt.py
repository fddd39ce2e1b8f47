# attack: BaseException subclasses
# stops: limits: the script did not finish
# os: limits: the script did not finish
# baseline: -guards +interrupt => escaped
# catching KeyboardInterrupt by name (evaluated only when something is raised)
while True:
    try:
        while True:
            pass
    except KeyboardInterrupt:
        print("ESCAPED: survived the interrupt")
