"""What a run keeps on disk and reads back: the results file, expected failures and shards.
May import the layers below it (core for the verdict record).
"""
