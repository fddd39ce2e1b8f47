# attack: generator/coroutine/traceback frames
# stops: restrictedpython
# tb_frame of a caught exception
try:
    1 / 0
except Exception as e:
    print(e.__traceback__.tb_frame.f_globals, "ESCAPED")
