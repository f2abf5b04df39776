"""coin's test suite (run with ``python -m twisted.trial tests``).

``tests/unit/<package>/`` tests one package of ``coin`` without a running node;
``tests/functional/`` drives whole nodes, in this process (tests/inprocess.py) or as
``coind`` processes (tests/nodeharness.py). Shared helpers live here, beside ``data/``.
"""

import os

#: The repository's root, and the test data directory.
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data")

try:
    from hypothesis import settings
except ImportError:  # hypothesis is a test extra; only the property tests need it
    pass
else:
    # Modest, reproducible property tests; HYPOTHESIS_PROFILE=thorough for a long run.
    settings.register_profile("coin", max_examples=200, deadline=None,
                              derandomize=True, database=None)
    settings.register_profile("thorough", max_examples=5000, deadline=None)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "coin"))
