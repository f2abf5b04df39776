"""The REST interface (``/rest/...``): read-only chain data without RPC authentication.

See :mod:`coin.rest.resource` for the paths, formats and error mapping.
"""

from coin.rest.resource import RESTResource

__all__ = ["RESTResource"]
