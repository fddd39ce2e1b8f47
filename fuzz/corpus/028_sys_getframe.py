# attack: generator/coroutine/traceback frames
# stops: restrictedpython
# sys._getframe
import sys
print(sys._getframe(1).f_globals, "ESCAPED")
