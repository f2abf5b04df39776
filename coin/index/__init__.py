"""Optional indexes kept beside the chain state (-txindex)."""
