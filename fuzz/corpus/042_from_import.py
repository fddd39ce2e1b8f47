# attack: builtins recovery
# stops: guards
# from os import system
from os import system
print(system, "ESCAPED")
