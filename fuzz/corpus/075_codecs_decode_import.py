# attack: loader and module tricks
# stops: guards
# codecs tricks to hide an import
import codecs
print(codecs.decode("bf", "rot13"), "ESCAPED")
