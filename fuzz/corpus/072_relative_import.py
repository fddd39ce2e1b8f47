# attack: loader and module tricks
# stops: guards
# a relative import
from . import guards
print(guards, "ESCAPED")
