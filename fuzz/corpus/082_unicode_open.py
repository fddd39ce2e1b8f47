# attack: look-alike unicode identifiers
# stops: guards
# a look-alike of open (NFKC: 𝗈pen -> open)
print(𝗈pen("/etc/passwd"), "ESCAPED")
