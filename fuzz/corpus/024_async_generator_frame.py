# attack: generator/coroutine/traceback frames
# stops: restrictedpython
# ag_frame of an async generator
async def a():
    yield 1
print(a().ag_frame, "ESCAPED")
