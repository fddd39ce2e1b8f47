# attack: loader and module tricks
# stops: restrictedpython
# from os import *
from os import *
print("ESCAPED")
