# attack: builtins recovery
# stops: guards
# import os
import os
print(os.listdir("/"), "ESCAPED")
