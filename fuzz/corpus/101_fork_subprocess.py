# attack: fork bomb
# stops: guards: __import__ not found
# os: process/rlimits: Too many open files
# baseline: -guards => escaped
# subprocess.run
import subprocess
print("ESCAPED", subprocess.run(["/bin/true"]).returncode)
