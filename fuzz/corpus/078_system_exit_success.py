# attack: BaseException subclasses
# stops: guards: variable 'SystemExit' is not defined
# os: worker: SystemExit: 0
# baseline: -guards -worker => completed
# SystemExit(0) ends a naive runner (one that catches Exception) as a success, skipping the rest
print("checks start")
raise SystemExit(0)
print("checks passed")
