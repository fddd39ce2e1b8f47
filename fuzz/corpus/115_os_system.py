# attack: fork bomb
# stops: guards
# os.system
import os
os.system("id")
print("ESCAPED")
