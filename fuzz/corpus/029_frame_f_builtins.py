# attack: generator/coroutine/traceback frames
# stops: restrictedpython
# f_builtins of a frame
def g():
    yield 1
print(g().gi_frame.f_builtins, "ESCAPED")
