"""The node's own RPC methods, one module per category, each registered as a
``coin.rpc`` entry point in pyproject.toml."""
