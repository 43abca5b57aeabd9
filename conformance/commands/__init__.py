"""One module per CLI sub-command; each exposes ``register(subparsers)``.

Modules keep heavy imports (torch, pandas, hypothesis) inside their functions so that
``conformance --help`` and the static commands start fast.
"""
