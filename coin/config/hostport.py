"""``host[:port]`` option values (-rpcbind, -bind, -connect, -addnode) as Core splits them."""

from __future__ import annotations

import re
from typing import Tuple


def split_host_port(text: str, default_port: int) -> Tuple[str, int]:
    """Core's SplitHostPort: ``host``, ``host:port``, ``[v6]:port`` or a bare IPv6 address."""
    colon = text.rfind(":")
    if colon != -1:
        bracketed = text.startswith("[") and text[colon - 1:colon] == "]"
        multi_colon = text.rfind(":", 0, colon) != -1
        port = text[colon + 1:]
        if (colon == 0 or bracketed or not multi_colon) and re.fullmatch("[0-9]{1,5}", port) \
                and 0 < int(port) < 0x10000:
            text, default_port = text[:colon], int(port)
    if len(text) >= 2 and text[0] == "[" and text[-1] == "]":
        text = text[1:-1]
    return text, default_port
