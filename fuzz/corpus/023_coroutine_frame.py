# attack: generator/coroutine/traceback frames
# stops: restrictedpython
# cr_frame of a coroutine
async def c():
    pass
print(c().cr_frame, "ESCAPED")
