# attack: builtins recovery
# stops: guards
# help() (pydoc, pager)
help(len)
print("ESCAPED")
