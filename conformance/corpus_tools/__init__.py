"""The corpus build tool (``python -m conformance.corpus_tools build|show``): records CPU
calls from models and torch's OpInfo samples (needs ``torch.testing._internal``), and derives
backward calls. Outside the run-time layers: it may import any of them; none imports it.
"""
