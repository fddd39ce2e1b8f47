# attack: loader and module tricks
# stops: guards
# RestrictedPython's own modules
from RestrictedPython import safe_builtins
print(safe_builtins, "ESCAPED")
