# attack: BaseException subclasses
# stops: restrictedpython: "__exit__" is an invalid variable name
# os: limits: the script did not finish
# baseline: -restrictedpython -guards +interrupt => escaped
# a context manager whose __exit__ returns True swallows whatever ends the block
class Swallow:
    def __enter__(self):
        return self
    def __exit__(self, kind, value, traceback):
        return True
survived = 0
while survived < 3:
    with Swallow():
        while True:
            pass
    survived = survived + 1
print("ESCAPED: survived", survived, "interrupts")
