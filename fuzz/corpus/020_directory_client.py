# attack: function globals
# stops: guards
# the proxy's broker client
d = Directory("/")
print(d.client, "ESCAPED")
