# attack: generator/coroutine/traceback frames
# stops: guards
# the traceback through getattr
try:
    1 / 0
except ZeroDivisionError as e:
    tb = getattr(e, "with_traceback")
    print(tb, "ESCAPED")
