# attack: fork bomb
# stops: guards
# pty.spawn
import pty
pty.spawn("/bin/sh")
print("ESCAPED")
