# attack: builtins recovery
# stops: guards
# assigning to a public attribute
d = Directory("/")
d.path = "/etc"
print(d.files(), "ESCAPED")
