# attack: function globals
# stops: guards
# an API method's attributes through the guard
d = Directory("/")
f = d.files
print(f.im_func, "ESCAPED")
