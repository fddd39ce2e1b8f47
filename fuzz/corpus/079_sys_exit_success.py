# attack: BaseException subclasses
# stops: guards: __import__ not found
# os: worker: SystemExit: 0
# baseline: -guards -worker => completed
# sys.exit(0) (SystemExit) to end a naive runner as a success, skipping the checks after it
import sys
print("checks start")
sys.exit(0)
print("checks passed")
