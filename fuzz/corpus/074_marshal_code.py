# attack: loader and module tricks
# stops: guards
# marshal.loads to build code
import marshal
print(marshal.loads(b"c"), "ESCAPED")
