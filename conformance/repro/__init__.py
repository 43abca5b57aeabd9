"""Standalone repro snippets, one module per kind of call (plain, autograd, views, out=,
in-place); :func:`~conformance.repro.snippet.snippet` picks by the call's type. May import
compare, inputs and core.
"""
