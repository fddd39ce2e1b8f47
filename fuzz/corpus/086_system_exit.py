# attack: BaseException subclasses
# stops: guards
# SystemExit to end the worker early as a success
raise SystemExit(0)
