# attack: loader and module tricks
# stops: restrictedpython
# __name__ and sys.modules
print(__name__, "ESCAPED")
