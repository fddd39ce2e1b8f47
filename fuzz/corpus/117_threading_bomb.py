# attack: fork bomb
# stops: guards
# threads without bound
import threading
while True:
    threading.Thread(target=lambda: None).start()
