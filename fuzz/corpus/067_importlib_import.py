# attack: loader and module tricks
# stops: guards
# importlib.import_module
import importlib
print(importlib.import_module("os"), "ESCAPED")
