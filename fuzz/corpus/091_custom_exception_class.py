# attack: BaseException subclasses
# stops: guards
# a subclass of BaseException
class E(BaseException):
    pass
raise E()
