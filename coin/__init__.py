"""coin: a full blockchain node on Twisted."""

__version__ = "0.1.0"
