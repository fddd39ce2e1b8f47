# attack: builtins recovery
# stops: guards
# setattr on an API object
setattr(Directory("/"), "path", "/etc")
print("ESCAPED")
