# attack: output bomb
# stops: limits: output limit exceeded
# os: limits: output limit exceeded
# baseline: -limits => output
# terminal escape sequences in bulk
while True:
    print("\x1b[2J\x1b]0;pwned\x07" * 100)
