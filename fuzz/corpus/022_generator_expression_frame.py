# attack: generator/coroutine/traceback frames
# stops: restrictedpython
# a generator expression's frame
gen = (x for x in [1])
print(gen.gi_frame, "ESCAPED")
