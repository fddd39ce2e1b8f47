# attack: builtins recovery
# stops: restrictedpython: Exec calls are not allowed
# os: process/seccomp: Operation not permitted
# baseline: -restrictedpython -guards => escaped
# exec of source text
exec("import os\nprint('ESCAPED', os.posix_spawn('/bin/true', ['true'], {}))")
