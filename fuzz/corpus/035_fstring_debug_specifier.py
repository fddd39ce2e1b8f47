# attack: format-string attribute access
# stops: restrictedpython: "_client" is an invalid attribute name
# os: none: completed
# baseline: -restrictedpython => escaped
# an f-string's self-documenting = field, naming a proxy's private broker client
d = Directory("/")
text = f"{d._client.write_fd=}"
if text == "d._client.write_fd=1":
    print("ESCAPED", text)
