# attack: look-alike unicode identifiers
# stops: restrictedpython
# mathematical letters normalizing to __import__
print(＿＿𝐢mport＿＿("os"), "ESCAPED")
