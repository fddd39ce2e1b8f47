# attack: BaseException subclasses
# stops: guards
# catching BaseException to survive limits
try:
    raise SystemExit(0)
except BaseException:
    pass
print("ESCAPED")
