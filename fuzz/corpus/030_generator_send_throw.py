# attack: generator/coroutine/traceback frames
# stops: guards
# a generator's throw method
def g():
    yield 1
print(g().throw, "ESCAPED")
