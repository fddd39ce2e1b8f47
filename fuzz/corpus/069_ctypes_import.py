# attack: loader and module tricks
# stops: guards
# import ctypes (already loaded in the worker)
import ctypes
print(ctypes.CDLL(None), "ESCAPED")
