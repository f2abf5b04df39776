"""The transaction memory pool: relay policy, acceptance and the pool itself."""
