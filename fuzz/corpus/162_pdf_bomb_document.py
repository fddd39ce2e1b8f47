# attack: memory bomb
# stops: limits: cannot read PDF|time limit|did not finish
# os: limits: cannot read PDF|time limit|did not finish
# baseline: -broker => memory
# a 0.2 MB PDF whose one page repeats a text operator: parsing it needs ~2 GB (once inside the trusted broker)
print(File("amplify/bomb.pdf").page_count)
