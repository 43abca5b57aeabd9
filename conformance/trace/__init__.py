"""Which overloads some Python code calls: the dispatch recorder and the model census
(``conformance trace``). May import core.
"""
