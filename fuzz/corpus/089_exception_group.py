# attack: BaseException subclasses
# stops: guards
# BaseExceptionGroup
raise BaseExceptionGroup("x", [SystemExit(0)])
