# attack: BaseException subclasses
# stops: guards
# raise a value that is not an exception
raise 1
