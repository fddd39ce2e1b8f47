# attack: BaseException subclasses
# stops: guards
# StopIteration out of the module
raise StopIteration
