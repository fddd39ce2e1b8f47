# attack: BaseException subclasses
# stops: restrictedpython: "__exit__" is an invalid variable name
# os: limits: the script did not finish
# baseline: -restrictedpython -guards +interrupt => escaped
# a context manager whose __exit__ returns True swallows whatever ends the block
class Swallow:
    def __enter__(self):
        return self
    def __exit__(self, kind, value, traceback):
        print("ESCAPED: survived", kind)
        return True
while True:
    with Swallow():
        while True:
            pass
