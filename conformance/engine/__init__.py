"""The search: one check on one overload with Hypothesis, fingerprints of distinct failures,
the verdict ladder and the hooks into Hypothesis. May import checks, repro, compare, inputs and
core.
"""
