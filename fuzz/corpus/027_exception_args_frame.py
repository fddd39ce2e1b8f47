# attack: generator/coroutine/traceback frames
# stops: guards
# attributes of an exception object
try:
    [][1]
except IndexError as e:
    print(e.args, "ESCAPED")
