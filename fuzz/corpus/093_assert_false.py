# attack: BaseException subclasses
# stops: guards
# AssertionError escaping as a traceback
assert False, "x"
