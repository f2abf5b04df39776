"""Block assembly and nonce grinding (regtest mining and tests)."""
