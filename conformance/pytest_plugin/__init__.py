"""The pytest plugin (entry point ``pytest11: conformance``): options, the session's state,
items, fork isolation and the watchdog, crash attribution, the progress line and collection-time
verdicts. May import store, engine, checks, repro, compare, inputs and core.
"""
