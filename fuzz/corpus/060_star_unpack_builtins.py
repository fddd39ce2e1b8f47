# attack: builtins recovery
# stops: guards
# iterating over a non-iterable API object
print(*Directory("/").files()[0], "ESCAPED")
