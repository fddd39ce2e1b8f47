# attack: memory bomb
# stops: limits: reply would exceed
# os: limits: reply would exceed
# baseline: -broker => memory
# snippets() of a pattern matching every character, each with 30,000 characters around it: 80,000 excerpts of up to 60 KB
x = File("amplify/wide.txt").snippets("w", max_results=1000000, context_chars=30000)
print(len(x))
