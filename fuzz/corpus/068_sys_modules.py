# attack: loader and module tricks
# stops: guards
# sys.modules['os']
import sys
print(sys.modules["os"], "ESCAPED")
