"""coin-qt: the node with its GUI, a local web application served to the user's browser.

The back end (this package's modules) serves the page under ``static/``, a small JSON API
that dispatches into the node's RPC method table in-process, and a WebSocket of live
events; coin/gui/README.md is the contract between it and the page.
"""
