# attack: format-string attribute access
# stops: guards
# string.Template
from string import Template
print(Template("$x").substitute(x=1), "ESCAPED")
