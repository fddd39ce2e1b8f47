# attack: BaseException subclasses
# stops: guards
# GeneratorExit raised by the script
raise GeneratorExit
