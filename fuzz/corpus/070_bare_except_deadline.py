# attack: BaseException subclasses
# stops: limits: the script did not finish
# os: limits: the script did not finish
# baseline: +interrupt => escaped
# a bare except around a busy loop swallows an exception-based deadline and keeps running
while True:
    try:
        while True:
            pass
    except:
        print("ESCAPED: survived the interrupt")
