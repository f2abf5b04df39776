"""Reply bodies kept by key, bounded by their total size (least recently used dropped)."""

from __future__ import annotations

from collections import OrderedDict
from typing import Hashable, Optional

from coin.rest.formats import Body


class BodyCache:
    """An LRU map of reply bodies holding at most ``limit`` bytes of them (reactor only)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._bodies: "OrderedDict[Hashable, Body]" = OrderedDict()
        self._size = 0

    def __len__(self) -> int:
        return len(self._bodies)

    def get(self, key: Hashable) -> Optional[Body]:
        body = self._bodies.get(key)
        if body is not None:
            self._bodies.move_to_end(key)
        return body

    def put(self, key: Hashable, body: Body) -> None:
        """Keep ``body`` unless it alone is over the limit (it would empty the cache)."""
        if len(body[1]) > self.limit:
            return
        old = self._bodies.pop(key, None)
        if old is not None:
            self._size -= len(old[1])
        self._bodies[key] = body
        self._size += len(body[1])
        while self._size > self.limit:
            self._size -= len(self._bodies.popitem(last=False)[1][1])

    def clear(self) -> None:
        self._bodies.clear()
        self._size = 0
