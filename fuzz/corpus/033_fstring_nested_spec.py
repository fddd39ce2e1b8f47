# attack: format-string attribute access
# stops: restrictedpython: "__init__" is an invalid attribute name
# os: none: completed
# baseline: -restrictedpython => escaped
# a dunder walk hidden in an f-string's nested format spec
d = Directory("/")
text = f"{'x':{d.__init__.__globals__['BrokerClient'].call.__globals__['frames'].os.sep}>3}"
if text == "//x":
    print("ESCAPED", text)
