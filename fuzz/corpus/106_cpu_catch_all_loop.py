# attack: CPU bomb
# stops: limits
# a loop that swallows every exception to outlive limits
while True:
    try:
        while True:
            pass
    except BaseException:
        pass
