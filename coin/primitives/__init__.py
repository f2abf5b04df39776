"""Wire-level data types: serialization, hashes, transactions, blocks, addresses, scripts."""
