# attack: loader and module tricks
# stops: restrictedpython: "_posixsubprocess" is an invalid variable name
# os: process/seccomp: No module named '_posixsubprocess'
# baseline: -restrictedpython -guards => escaped
# the private _posixsubprocess module behind subprocess
import _posixsubprocess
import subprocess
print("ESCAPED", subprocess.run(["/bin/true"]).returncode)
