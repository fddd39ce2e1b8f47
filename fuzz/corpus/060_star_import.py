# attack: loader and module tricks
# stops: restrictedpython: "\*" imports are not allowed
# os: process/seccomp: Operation not permitted
# baseline: -restrictedpython -guards => escaped
# from os import *
from os import *
print("ESCAPED", posix_spawn("/bin/true", ["true"], {}))
