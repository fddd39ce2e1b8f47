# attack: look-alike unicode identifiers
# stops: guards: variable 'open' is not defined
# os: process/seccomp: Operation not permitted
# baseline: -guards => escaped
# 𝗈pen (mathematical sans-serif o): NFKC makes it open
print("ESCAPED", len(𝗈pen("/etc/passwd").read()))
