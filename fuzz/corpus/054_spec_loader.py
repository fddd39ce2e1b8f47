# attack: loader and module tricks
# stops: restrictedpython: "__spec__" is an invalid variable name
# os: process/seccomp: Operation not permitted
# baseline: -restrictedpython -guards => escaped
# __spec__.loader
posix = __spec__.loader.load_module("posix")
print("ESCAPED", posix.posix_spawn("/bin/true", ["true"], {}))
