"""What a check runs: element values, shapes, the schema strategies, non-contiguous views,
out= forms, in-place variants and recorded calls (the corpus). May import core.
"""
