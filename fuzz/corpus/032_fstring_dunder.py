# attack: format-string attribute access
# stops: restrictedpython: "__init__" is an invalid attribute name
# os: none: completed
# baseline: -restrictedpython => escaped
# an f-string field is an expression: attribute access to the os module
d = Directory("/")
text = f"{d.__init__.__globals__['BrokerClient'].call.__globals__['frames'].os.name}"
if text == "posix":
    print("ESCAPED", text)
