# attack: fork bomb
# stops: restrictedpython: "_thread" is an invalid variable name
# os: limits: can't start new thread
# baseline: -restrictedpython -guards => escaped
# 100 threads that stay alive (the built-in _thread module needs no file)
import _thread, time
for i in range(100):
    _thread.start_new_thread(time.sleep, (3,))
print("ESCAPED: 100 threads")
