"""What "agrees with CPU" means for one result: output comparison, exactness classes and
tolerances, refusal judgement (the :class:`~conformance.compare.context.Context` a check runs
through), gradients, strides, ties and shape-only backends. May import inputs and core.
"""
