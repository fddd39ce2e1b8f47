# attack: look-alike unicode identifiers
# stops: restrictedpython
# fullwidth low lines normalize to __class__ (NFKC)
print(().＿＿class＿＿, "ESCAPED")
