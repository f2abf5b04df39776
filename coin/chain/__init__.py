"""The validation pipeline: the only writer of chain state."""
