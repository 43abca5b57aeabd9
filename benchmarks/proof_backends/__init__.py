"""Proof backends: PrivateUse1 devices that are right but are not CPU (issue 25, item 8).

Each is one boxed fallback (:mod:`proof_backends.fallback`) that runs every op on CPU over
aliases of host memory and recomputes its floating values its own way:

- :mod:`proof_backends.wide` computes every floating op in float64 and rounds back once (more
  accurate than CPU);
- :mod:`proof_backends.reorder` computes each op on copies of its inputs in another memory
  layout (column-major, strided), so reductions and products run in another order;
- :mod:`proof_backends.ftz` flushes float32/bfloat16/complex64 subnormals of every input and
  result to signed zero, and declares it (``ASSUMES = ("ftz",)``).

Run one with ``PYTHONPATH=benchmarks conformance run --backend privateuse1:proof_backends.wide``.
Only one PrivateUse1 backend exists per process: import one module per process. Nothing in
``conformance/`` imports this package.
"""
