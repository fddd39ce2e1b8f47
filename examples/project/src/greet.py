def greet(name):
    # TODO: greet in more languages
    return "Hello, " + name


if __name__ == "__main__":
    print(greet("world"))
