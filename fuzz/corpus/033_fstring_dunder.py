# attack: format-string attribute access
# stops: restrictedpython
# an f-string reaching a dunder
print(f"{().__class__}", "ESCAPED")
