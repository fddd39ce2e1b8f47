# attack: loader and module tricks
# stops: guards
# the worker's own package
import sandbox_worker.protocol
print(sandbox_worker.protocol, "ESCAPED")
