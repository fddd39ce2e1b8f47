# attack: fork bomb
# stops: guards: __import__ not found
# os: process/seccomp: No module named 'subprocess'
# baseline: -guards => escaped
# subprocess.run
import subprocess
print("ESCAPED", subprocess.run(["/bin/true"]).returncode)
