"""Core statements compiled once and executed straight on a DBAPI cursor.

For the hot paths only (UTXO lookups and writes, block-index flushes): it skips
SQLAlchemy's per-execution work (cache lookup, bind and result processing),
which makes batched lookups about 4x and index upserts about 3x slower (see
``bench/utxo.py``).  The SQL text still comes from SQLAlchemy for
the engine's dialect, so nothing here is tied to SQLite.
"""

from __future__ import annotations

from typing import (
    Any,
    Callable,
    Dict,
    Hashable,
    Iterable,
    List,
    Optional,
    Sequence,
    Tuple,
    TypeVar,
)

from sqlalchemy import Table
from sqlalchemy.engine import Dialect
from sqlalchemy.sql.expression import ClauseElement

from coin.storage.dialect import upsert_statements

_T = TypeVar("_T")


class RawStatement:
    """``stmt`` for ``dialect``, taking parameters as sequences in the order of ``names``."""

    __slots__ = ("sql", "_convert")

    def __init__(self, stmt: ClauseElement, dialect: Dialect, names: Sequence[str]) -> None:
        compiled = stmt.compile(dialect=dialect)
        self.sql = compiled.string
        self._convert: Optional[Callable[[Sequence[Any]], Any]]
        if dialect.positional:
            order = [list(names).index(name) for name in compiled.positiontup or ()]
            if order == list(range(len(names))):
                self._convert = None
            else:
                self._convert = lambda row: tuple(row[i] for i in order)
        else:
            self._convert = lambda row: dict(zip(names, row, strict=True))

    def execute(self, cursor: Any, params: Sequence[Any]) -> List[tuple]:
        """Run once; returns all result rows (so no read transaction stays open)."""
        cursor.execute(self.sql, params if self._convert is None else self._convert(params))
        return cursor.fetchall() if cursor.description else []

    def executemany(self, cursor: Any, rows: Iterable[Sequence[Any]]) -> None:
        convert = self._convert
        cursor.executemany(self.sql, rows if convert is None else map(convert, rows))



_cache: Dict[Tuple[str, str, Hashable], Any] = {}


def cached(dialect: Dialect, key: Hashable, build: Callable[[], _T]) -> _T:
    """``build()``, done once per process and dialect (compiling big statements is slow)."""
    cache_key = (dialect.name, dialect.paramstyle, key)
    try:
        return _cache[cache_key]
    except KeyError:
        value = _cache[cache_key] = build()
        return value


def raw_upserts(dialect: Dialect, table: Table, names: Sequence[str]) -> List[RawStatement]:
    """``table``'s upsert statements (see ``dialect.upsert_statements``), compiled."""
    return cached(dialect, ("upsert", table.name), lambda: [
        RawStatement(stmt, dialect, names) for stmt in upsert_statements(table, dialect.name)])
