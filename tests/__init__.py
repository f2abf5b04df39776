"""coin's test suite (run with ``python -m twisted.trial tests``)."""

try:
    from hypothesis import settings
except ImportError:  # hypothesis is a test extra; only the property tests need it
    pass
else:
    # Modest, reproducible property tests; HYPOTHESIS_PROFILE=thorough for a long run.
    settings.register_profile("coin", max_examples=200, deadline=None,
                              derandomize=True, database=None)
    settings.register_profile("thorough", max_examples=5000, deadline=None)
    import os

    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "coin"))
