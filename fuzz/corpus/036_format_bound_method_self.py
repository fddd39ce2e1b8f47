# attack: format-string attribute access
# stops: guards: string has no attribute 'format'
# os: none: completed
# baseline: -guards => escaped
# a format field through a bound built-in's __self__ to the broker client's pipe descriptors
text = "{0.__self__.client.write_fd}".format(File)
if text == "1":
    print("ESCAPED", text)
