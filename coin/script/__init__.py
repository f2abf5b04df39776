"""Script evaluation, signature hashing, standard templates and signing."""
