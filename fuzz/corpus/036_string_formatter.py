# attack: format-string attribute access
# stops: guards
# string.Formatter().get_field
import string
print(string.Formatter().get_field("0.__class__", [1], {}), "ESCAPED")
