# attack: fork bomb
# stops: guards
# subprocess.Popen
import subprocess
print(subprocess.check_output(["id"]), "ESCAPED")
