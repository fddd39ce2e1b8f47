# attack: BaseException subclasses
# stops: limits: the script did not finish
# os: limits: the script did not finish
# baseline: +interrupt => escaped
# a bare except around a busy loop swallows an exception-based deadline and keeps running
survived = 0
while survived < 3:
    try:
        while True:
            pass
    except:
        survived = survived + 1
print("ESCAPED: survived", survived, "interrupts")
