"""``python -m conformance.corpus_tools build|show ...``: the corpus build tool."""

from __future__ import annotations

import sys

from conformance.corpus_tools.build import main

sys.exit(main())
