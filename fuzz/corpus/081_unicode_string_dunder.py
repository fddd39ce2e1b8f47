# attack: look-alike unicode identifiers
# stops: guards
# a look-alike dunder in a getattr string (not normalized)
print(getattr((), "＿＿class＿＿"), "ESCAPED")
