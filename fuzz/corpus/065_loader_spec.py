# attack: loader and module tricks
# stops: restrictedpython
# __loader__ / __spec__ of the module
print(__loader__.load_module("os"), "ESCAPED")
