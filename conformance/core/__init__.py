"""The records every layer shares: overload signatures, calls, backends, verdicts, value fills,
read-back of results, the in-flight marker and the run's op database. Imports opdb, torch and
the standard library, nothing else of conformance.
"""
