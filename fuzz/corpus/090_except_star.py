# attack: BaseException subclasses
# stops: restrictedpython
# except* (TryStar, unsupported by RestrictedPython)
try:
    pass
except* Exception:
    pass
print("ESCAPED")
