# attack: format-string attribute access
# stops: guards: string has no attribute 'format'
# os: none: completed
# baseline: -guards => escaped
# str.format walking attributes and items of an API object down to the os module
text = "{0.__init__.__globals__[BrokerClient].call.__globals__[frames].os.name}".format(Directory("/"))
if text == "posix":
    print("ESCAPED", text)
