"""coin-cli: the command-line JSON-RPC client (stdlib and coin.config only, starts fast)."""
