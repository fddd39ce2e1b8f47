# attack: BaseException subclasses
# stops: guards
# KeyboardInterrupt raised by the script
raise KeyboardInterrupt
