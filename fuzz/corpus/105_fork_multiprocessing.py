# attack: fork bomb
# stops: guards: __import__ not found
# os: process/seccomp: No module named 'multiprocessing'
# baseline: -guards => escaped
# multiprocessing
import multiprocessing
child = multiprocessing.get_context("fork").Process(target=len, args=("x",))
child.start()
child.join()
print("ESCAPED", child.exitcode)
