# attack: format-string attribute access
# stops: guards: string has no attribute 'format_map'
# os: none: completed
# baseline: -guards => escaped
# str.format_map with a mapping holding an API object
text = "{d.__init__.__globals__[BrokerClient].call.__globals__[frames].os.name}".format_map({"d": Directory("/")})
if text == "posix":
    print("ESCAPED", text)
