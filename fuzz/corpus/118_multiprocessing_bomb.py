# attack: fork bomb
# stops: guards
# multiprocessing
import multiprocessing
multiprocessing.Process(target=print).start()
print("ESCAPED")
