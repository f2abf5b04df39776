"""``/rest``: Core's REST interface on twisted.web.

Paths (GET and HEAD; any other method gets 405):

- ``block/<hash>.<fmt>``, ``block/notxdetails/<hash>.<fmt>``
- ``headers/<count>/<hash>.<fmt>`` (count 1..2000)
- ``tx/<txid>.<fmt>``
- ``getutxos[/checkmempool]/<txid>-<n>/....<fmt>`` (at most 15 outpoints)
- ``blockhashbyheight/<height>.<fmt>``
- ``chaininfo.json``, ``mempool/info.json``, ``mempool/contents.json``
- ``openapi.json``: the OpenAPI description of all these (coin/rest/openapi.py)

``fmt`` is ``json``, ``hex`` or ``bin`` (the last four paths: ``json`` only).
Handlers are plain functions of (path argument, format) returning ``(content type,
body)`` when they have it at once (sent without a Deferred: most answers of a poller come
from memory), else a Deferred of it, or raising :class:`RESTError`;
:meth:`RESTResource.render` maps every failure to a reply in one place.  Errors are ``text/plain`` with the
message and ``\\r\\n``, as Core; an unknown path is 404 with an empty body.

Block data is read and rendered in the reactor's thread pool, so a large block
never holds the reactor for its whole render.
"""

from __future__ import annotations

import re
import string
import threading
from functools import lru_cache
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from twisted.internet.defer import (
    CancelledError, Deferred, DeferredSemaphore, inlineCallbacks, succeed,
)
from twisted.logger import Logger
from twisted.python.failure import Failure
from twisted.web import resource, server

from coin.chain.access import ChainAccess, ChainStatus
from coin.chain.index import BlockIndexEntry
from coin.chain.snapshot import ChainSnapshot
from coin.primitives.block import Block, BlockHeader
from coin.primitives.hashes import hash_to_hex
from coin.primitives.serialize import ByteReader, DeserializationError, compact_size
from coin.primitives.transaction import Transaction
from coin.rest.cache import BodyCache
from coin.rest.formats import (
    ALL_FORMATS, BIN, CONTENT_TYPES, HEX, JSON, JSON_ONLY, Body, available_text, binary_body,
    json_body,
)
from coin.mempool.coinview import coins_with_pool
from coin.mempool.service import MempoolService
from coin.storage.errors import DatabaseUnreachable
from coin.views.block import block_json, header_json
from coin.views.chaininfo import chain_info_json
from coin.views.mempool import mempool_contents_json, mempool_info_json
from coin.views.transaction import tx_block_fields, tx_json
from coin.views.utxo import getutxos_bin, getutxos_json
from coin.http.lifetime import cancel_when_gone

_log = Logger()

MAX_HEADERS = 2000
MAX_GETUTXOS_OUTPOINTS = 15
#: Blocks whose transaction positions /tx remembers (a block of 2,000 txs: about 200 kB).
POSITION_CACHE_BLOCKS = 16
#: Heavy work (reading and rendering a block, 2,000 headers, a transaction's undo data)
#: runs in the thread pool this many at a time. Python threads share one GIL: every extra
#: busy thread delays the reactor (and so RPC) further, for no extra throughput.
HEAVY_CONCURRENCY = 1
#: Bytes of block JSON bodies kept for the current tip (a few MB each for full blocks).
BLOCK_JSON_CACHE_BYTES = 32 << 20
#: Bytes of block .hex/.bin bodies kept (the stored block, or twice that in hex).
BLOCK_RAW_CACHE_BYTES = 16 << 20
#: Bytes of confirmed transactions kept by txid, and of their JSON bodies (for the tip).
TX_RAW_CACHE_BYTES = 4 << 20
TX_JSON_CACHE_BYTES = 8 << 20
HTTP_BAD_REQUEST = 400
HTTP_NOT_FOUND = 404
HTTP_BAD_METHOD = 405
HTTP_INTERNAL_SERVER_ERROR = 500
HTTP_SERVICE_UNAVAILABLE = 503

_HEX64 = re.compile(r"[0-9a-fA-F]{64}\Z")
_DIGITS = re.compile(r"[0-9]+\Z")
#: What Core's ParseInt32 accepts: strtol's optional sign and decimal digits, nothing else.
_INT_TEXT = re.compile(r"[+-]?[0-9]+\Z")
#: Core's SAFE_CHARS_DEFAULT: what SanitizeString keeps of text echoed in an error.
_SAFE_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ01234567890 .,;-_/:?@()")


class RESTError(Exception):
    """A failed request: HTTP status and the message (sent as text with ``\\r\\n``)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class NoSuchPath(Exception):
    """Not a REST path: 404 with an empty body (Core's unhandled-URI reply)."""


# ---------------------------------------------------------------- parsing


def split_format(part: str) -> Tuple[str, Optional[str]]:
    """Core's ParseDataFormat: ``<param>.<fmt>`` split at the last dot.

    Without a known suffix the whole text is the parameter and there is no format,
    so ``<hash>.json?x=y`` (the query string is part of the path, as Core reads it)
    and ``<hash>.xml`` are an invalid hash, not a missing format.
    """
    param, dot, suffix = part.rpartition(".")
    if dot and suffix in ALL_FORMATS:
        return param, suffix
    return part, None


def check_format(fmt: Optional[str], formats: Sequence[str]) -> str:
    """``fmt`` if the endpoint serves it; else Core's 404 (its last check, after the lookup)."""
    if fmt not in formats:
        raise RESTError(HTTP_NOT_FOUND,
                        "output format not found (available: %s)" % available_text(tuple(formats)))
    return fmt


def parse_format(part: str, formats: Sequence[str]) -> Tuple[str, str]:
    """:func:`split_format` and :func:`check_format` at once (paths with no parameter check)."""
    param, fmt = split_format(part)
    return param, check_format(fmt, formats)


def parse_hex_body(body: bytes) -> bytes:
    """Core's ParseHex: pairs of hex digits, whitespace between them skipped; stops at the
    first character that is not a hex digit (a dangling digit is dropped)."""
    text = body.decode("latin-1")
    out = bytearray()
    i = 0
    while True:
        while i < len(text) and text[i] in " \t\n\v\f\r":
            i += 1
        pair = text[i:i + 2]
        if len(pair) != 2 or not all(c in string.hexdigits for c in pair):
            return bytes(out)
        out.append(int(pair, 16))
        i += 2


def parse_posted_outpoints(data: bytes) -> Tuple[bool, List[Tuple[bytes, int]]]:
    """The outpoints of a POSTed getutxos body, read exactly as Core 0.17 reads them.

    Core puts the body into its stream as a serialized string, that is behind its
    compact-size length, then reads ``bool checkmempool, vector<COutPoint>``: the flag
    is taken from the length prefix and the vector from the body's first byte on.
    Unreadable data is Core's 400 "Parse error".
    """
    reader = ByteReader(compact_size(len(data)) + data)
    try:
        check_mempool = reader.read_u8() != 0
        count = reader.read_compact_size()
        if count * 36 > reader.remaining():
            raise DeserializationError("unexpected end of data")
        outpoints = []
        for _ in range(count):
            txid = reader.read(32)
            outpoints.append((txid, reader.read_u32()))
    except DeserializationError:
        raise RESTError(HTTP_BAD_REQUEST, "Parse error") from None
    return check_mempool, outpoints


def parse_int32(text: str) -> Optional[int]:
    """Core's ParseInt32: a signed decimal that fits 32 bits, else None.

    Checked as text first, so a path of thousands of digits never reaches ``int()``
    (which refuses more than 4,300 digits with a ValueError, i.e. a 500).
    """
    if not _INT_TEXT.match(text):
        return None
    digits = text.lstrip("+-").lstrip("0")
    if len(digits) > 10:
        return None
    value = (-1 if text[0] == "-" else 1) * int(digits or "0")
    return value if -0x80000000 <= value <= 0x7FFFFFFF else None


def sanitize(text: str) -> str:
    """Core's SanitizeString: only safe characters of user text go back in a reply."""
    return "".join(c for c in text if c in _SAFE_CHARS)


def parse_hash(text: str) -> bytes:
    """64 hex digits (either case) in RPC order -> internal order; 400 otherwise."""
    if not _HEX64.match(text):
        raise RESTError(HTTP_BAD_REQUEST, "Invalid hash: %s" % text)
    return bytes.fromhex(text)[::-1]


def parse_outpoints(segments: Sequence[str]) -> Tuple[bool, List[Tuple[bytes, int]]]:
    """``[checkmempool, ]txid-n, ...`` -> (check mempool, outpoints); Core's errors (the
    maximum is checked by :func:`check_outpoint_count`)."""
    check_mempool = bool(segments) and segments[0] == "checkmempool"
    outpoints: List[Tuple[bytes, int]] = []
    for segment in segments[1 if check_mempool else 0:]:
        txid, dash, n_text = segment.partition("-")
        n = parse_int32(n_text)
        if not dash or not _HEX64.match(txid) or n is None:
            raise RESTError(HTTP_BAD_REQUEST, "Parse error")
        # Core casts the int32 to the outpoint's uint32: -1 is output 4294967295.
        outpoints.append((bytes.fromhex(txid)[::-1], n & 0xFFFFFFFF))
    if not outpoints:
        raise RESTError(HTTP_BAD_REQUEST, "Error: empty request")
    return check_mempool, outpoints


def check_outpoint_count(outpoints: Sequence[Tuple[bytes, int]]) -> None:
    if len(outpoints) > MAX_GETUTXOS_OUTPOINTS:
        raise RESTError(HTTP_BAD_REQUEST, "Error: max outpoints exceeded (max: %d, tried: %d)"
                        % (MAX_GETUTXOS_OUTPOINTS, len(outpoints)))


def entry_header(entry: BlockIndexEntry) -> bytes:
    """The 80-byte serialized header of an index entry."""
    return BlockHeader(entry.version, entry.prev_hash, entry.merkle_root, entry.time,
                       entry.bits, entry.nonce).serialize()


# ---------------------------------------------------------------- handlers


#: What a handler returns: the body now, or a Deferred firing with it.
Reply = Union[Body, Deferred]


class RESTHandlers:
    """The endpoints, independent of HTTP: ``(path argument, format) -> Reply``."""

    def __init__(self, chain: ChainAccess, mempool: MempoolService,
                 pruned: Optional[Callable[[BlockIndexEntry], bool]] = None) -> None:
        """``pruned(entry)`` overrides the chain state's ``is_pruned_block`` (tests)."""
        self.chain = chain
        self.pool_service = mempool
        self.pruned = pruned
        #: block hash -> {txid: position}, for the undo data of /tx (insertion order = age).
        self._positions: Dict[bytes, Dict[bytes, int]] = {}
        self._positions_lock = threading.Lock()
        self._heavy = DeferredSemaphore(HEAVY_CONCURRENCY)
        #: (block hash, tx detail) -> block JSON body, valid for the tip in _json_tip only:
        #: confirmations and nextblockhash change with the active chain, nothing else does.
        self._block_json = BodyCache(BLOCK_JSON_CACHE_BYTES)
        self._json_tip: Optional[bytes] = None
        #: (block hash, "hex" or "bin") -> body: a block's bytes never change; served only
        #: while its index entry says the data is on disk (pruning clears that first).
        self._block_raw = BodyCache(BLOCK_RAW_CACHE_BYTES)
        #: txid -> (block hash, stored bytes) of confirmed transactions found through
        #: -txindex, the same of those found through the UTXO set of the tip in _json_tip,
        #: and txid -> their JSON for that tip (see :meth:`tx`).
        self._tx_raw = BodyCache(TX_RAW_CACHE_BYTES)
        self._tx_at_tip = BodyCache(TX_RAW_CACHE_BYTES)
        self._tx_json = BodyCache(TX_JSON_CACHE_BYTES)
        #: False: every .hex/.bin read goes to the thread pool (tests force either path).
        self.read_on_reactor = True
        #: The last chaininfo.json body, with the snapshot and status it was made from.
        self._chaininfo: Optional[Tuple[ChainSnapshot, ChainStatus, Body]] = None
        self._openapi: Optional[bytes] = None

    def stamp(self, name: str) -> Optional[Tuple[Any, ...]]:
        """What the answers of endpoint ``name`` read besides their path, in a few attribute
        reads (doc/rest.md, "Kept answers"): the snapshot's serial, for a block's data the
        prune generation, for a transaction the memory pool's changes, for chaininfo the
        node's status (``ChainAccess.status_inputs``). Taken before an answer is made, an
        equal stamp later means that answer still holds. None for the endpoints whose
        answers depend on more (the mempool's objects read the clock)."""
        chain = self.chain
        reads = STAMPED_ENDPOINTS.get(name)
        if reads is None:
            return None
        serial = chain.snapshot().serial
        if reads == "chain":
            return (serial,)
        if reads == "status":
            return (serial, chain.status_inputs())
        generation = chain.state.prune_generation
        if reads == "data":
            return (serial, generation)
        pool = chain.mempool  # "pool": a transaction is the pool's first
        return (serial, generation, pool.transactions_updated if pool is not None else None)

    def _in_thread(self, f: Callable[[], Any]) -> Deferred:
        """``f()`` in the thread pool, one heavy job at a time (see HEAVY_CONCURRENCY)."""
        return self._heavy.run(self.chain.in_thread, f)

    # -- blocks

    def _missing_block(self, entry: Optional[BlockIndexEntry], text: str) -> Deferred:
        """Core's 404 for a block with no data here: "not available (pruned data)" when the
        node pruned it, else "not found"."""
        if entry is None:
            raise RESTError(HTTP_NOT_FOUND, "%s not found" % text)

        def answer(pruned: bool) -> None:
            raise RESTError(HTTP_NOT_FOUND, "%s not available (pruned data)" % text if pruned
                            else "%s not found" % text)
        return self._is_pruned(entry).addCallback(answer)

    def _is_pruned(self, entry: BlockIndexEntry) -> Deferred:
        """Core's test (data stored once, now gone, node has pruned), on the writer thread."""
        if self.pruned is not None:
            return succeed(self.pruned(entry))
        if not hasattr(self.chain.state, "is_pruned_block"):
            return succeed(False)
        return self.chain.call(lambda cs: cs.is_pruned_block(entry))

    def _raw_block_if_cached(self, state: Any, entry: Any, fmt: str) -> Optional[Body]:
        """.hex/.bin of a block whose bytes are in the page cache, read here on the reactor
        (no thread hop); None if that would wait (disk, pruning, the writer) or failed."""
        if not self.read_on_reactor:
            return None
        try:
            return binary_body(fmt, state.read_raw_block(entry, wait=False))
        except Exception:
            return None  # WouldBlock, or an error the thread's read reports properly

    def _follow_tip(self, view: ChainSnapshot) -> Optional[bytes]:
        """The snapshot's tip hash; a new one empties the block and transaction JSON caches
        (confirmations and nextblockhash change with the active chain; nothing else in a
        confirmed block's or transaction's JSON does) and the transactions found through
        the UTXO set (it changes with the tip)."""
        tip = view.tip.hash if view.tip is not None else None
        if tip != self._json_tip:
            self._block_json.clear()  # a new tip or a reorg
            self._tx_json.clear()
            self._tx_at_tip.clear()
            self._json_tip = tip
        return tip

    def block(self, part: str, tx_detail: bool) -> Reply:
        """A block's JSON (cached for the current tip) or its stored bytes (.hex/.bin: no
        parse, cached by hash while the block's data is on disk: they never change)."""
        param, fmt = split_format(part)
        block_hash = parse_hash(param)
        view = self.chain.snapshot()
        state = self.chain.state
        entry = state.lookup(block_hash)
        if entry is None or not entry.have_data():
            return self._missing_block(entry, param)
        fmt = check_format(fmt, ALL_FORMATS)
        tip = self._follow_tip(view)
        if fmt == JSON:
            body = self._block_json.get((block_hash, tx_detail))
        else:
            body = self._block_raw.get((block_hash, fmt))
            if body is None:
                body = self._raw_block_if_cached(state, entry, fmt)
                if body is not None:
                    self._block_raw.put((block_hash, fmt), body)
        if body is None:
            return self._read_block(view, entry, param, fmt, tx_detail, tip)
        return body

    @inlineCallbacks
    def _read_block(self, view: ChainSnapshot, entry: BlockIndexEntry, param: str, fmt: str,
                    tx_detail: bool, tip: Optional[bytes]):
        """:meth:`block` from the thread pool: the block file is not in the page cache, or
        the JSON is rendered."""
        state, params = self.chain.state, self.chain.params

        def read_and_render() -> Optional[Body]:
            try:
                if fmt != JSON:
                    # The stored bytes are the serialization: no parse and re-serialize.
                    return binary_body(fmt, state.read_raw_block(entry))
                block: Block = state.read_block(entry)
            except DatabaseUnreachable:
                raise
            except Exception:
                return None
            return json_body(block_json(block, entry, view, params, tx_detail=tx_detail))

        body = yield self._in_thread(read_and_render)
        if body is None:
            # Pruned or unreadable between the check and the read.
            yield self._missing_block(entry, param)
        if fmt != JSON:
            self._block_raw.put((entry.hash, fmt), body)
        elif tip == self._json_tip:
            self._block_json.put((entry.hash, tx_detail), body)
        return body

    def headers(self, part: str) -> Reply:
        param, fmt = split_format(part)
        pieces = param.split("/")
        if len(pieces) != 2:
            raise RESTError(HTTP_BAD_REQUEST,
                            "No header count specified. Use /rest/headers/<count>/<hash>.<ext>.")
        count_text, hash_text = pieces
        count = int(count_text) if _DIGITS.match(count_text) and len(count_text) < 10 else 0
        if not 1 <= count <= MAX_HEADERS:
            raise RESTError(HTTP_BAD_REQUEST, "Header count out of range: %s" % count_text)
        block_hash = parse_hash(hash_text)
        state = self.chain.snapshot()
        entries: List[BlockIndexEntry] = []
        entry = state.lookup(block_hash)
        # Core: only a block on the active chain starts a run (an unknown one gives []).
        while entry is not None and state.contains(entry):
            entries.append(entry)
            if len(entries) == count:
                break
            entry = state.next_on_chain(entry)
        if check_format(fmt, ALL_FORMATS) == JSON:
            # Up to 2,000 header objects: rendered off the reactor thread, like blocks.
            return self._in_thread(lambda: json_body([header_json(e, state) for e in entries]))
        return binary_body(fmt, b"".join(entry_header(e) for e in entries))

    def blockhash_by_height(self, part: str) -> Reply:
        param, fmt = split_format(part)
        height = parse_int32(param)
        if height is None or height < 0:
            raise RESTError(HTTP_BAD_REQUEST, "Invalid height: %s" % sanitize(param))
        entry = self.chain.snapshot().at_height(height)
        if entry is None:
            raise RESTError(HTTP_NOT_FOUND, "Block height out of range")
        if check_format(fmt, ALL_FORMATS) == JSON:
            return json_body({"blockhash": hash_to_hex(entry.hash)})
        if fmt == HEX:
            return (b"text/plain", hash_to_hex(entry.hash).encode("ascii") + b"\n")
        return binary_body(BIN, entry.hash)

    # -- transactions

    def tx(self, part: str) -> Reply:
        """A transaction: the pool's first (as Core), else the active chain's, sent as its
        stored bytes (.hex/.bin: no parse and re-serialize).

        A confirmed transaction found through -txindex keeps its bytes here: later requests
        are answered without a lookup or a thread hop while its block stays on the active
        chain with its data on disk, which is exactly while the index keeps finding it
        there.  One found through the UTXO set (no -txindex) is kept while the tip stays
        the same: the set is the tip's.  The JSON of either is kept while the tip stays.
        """
        param, fmt = split_format(part)
        txid = parse_hash(param)
        pool = self.chain.mempool
        pooled = pool.get(txid) if pool is not None else None
        if pooled is not None:
            return self._tx_body(txid, pooled.tx.serialize(), None, fmt, False)
        view = self.chain.snapshot()
        self._follow_tip(view)
        kept = self._tx_raw.get(txid) or self._tx_at_tip.get(txid)
        if kept is not None:
            entry = view.lookup(kept[0])
            if entry is not None and view.contains(entry) and entry.have_data():
                return self._tx_body(txid, kept[1], entry, fmt, True)
        return self._find_tx(txid, param, fmt)

    @inlineCallbacks
    def _find_tx(self, txid: bytes, param: str, fmt: Optional[str]):
        place = yield self.chain.locate_transaction(txid)
        if place is None:
            raise RESTError(HTTP_NOT_FOUND, "%s not found" % param)
        keep = place.indexed or place.utxo_tip == self._follow_tip(self.chain.snapshot())
        if keep:
            (self._tx_raw if place.indexed else self._tx_at_tip).put(
                txid, (place.entry.hash, place.raw))
        body = yield self._tx_body(txid, place.raw, place.entry, fmt, keep)
        return body

    def _tx_body(self, txid: bytes, raw: bytes, entry: Optional[BlockIndexEntry],
                 fmt: Optional[str], keep: bool) -> Reply:
        """The reply for a transaction found (``entry`` None: in the pool); ``keep``: its
        JSON may be kept for the current tip (confirmed, and found as of that tip)."""
        if check_format(fmt, ALL_FORMATS) != JSON:
            return binary_body(fmt, raw)
        body = self._tx_json.get(txid) if keep else None
        if body is not None:
            return body
        return self._render_tx(txid, Transaction.deserialize(raw), entry,
                               self._json_tip if keep else None)

    @inlineCallbacks
    def _render_tx(self, txid: bytes, tx: Transaction, entry: Optional[BlockIndexEntry],
                   keep_for: Optional[bytes]):
        """The JSON, kept if the tip is still ``keep_for`` (None: not kept)."""
        spent = yield self._spent_outputs(tx, entry)
        view = self.chain.snapshot()
        tip = self._follow_tip(view)
        fields: Dict[str, Any] = tx_block_fields(entry, view) if entry is not None else {}
        body = json_body(tx_json(tx, self.chain.params, spent_outputs=spent, **fields))
        if keep_for is not None and tip == keep_for and view.contains(entry):
            self._tx_json.put(txid, body)
        return body

    @inlineCallbacks
    def _spent_outputs(self, tx: Any, entry: Optional[BlockIndexEntry]):
        """What each input spends, where known (None per unknown input), or None.

        Confirmed: the block's undo data (one list per non-coinbase transaction).
        In the mempool: the UTXO set and the pool's outputs.
        """
        if tx.is_coinbase():
            return None
        if entry is None:
            keys = [(txin.prevout.txid, txin.prevout.n) for txin in tx.vin]
            pool = self.pool_service.pool
            coins = yield self.chain.call(coins_with_pool, pool, keys)
            return list(coins)
        if not self.chain.state.contains(entry) or not entry.have_data():
            return None
        state, txid, positions, lock = (self.chain.state, tx.txid, self._positions,
                                           self._positions_lock)

        def spent_in_block() -> Optional[list]:
            with lock:
                index = positions.get(entry.hash)
            if index is None:
                block = state.read_block(entry)
                index = {candidate.txid: i for i, candidate in enumerate(block.txs)}
                with lock:
                    positions[entry.hash] = index
                    while len(positions) > POSITION_CACHE_BLOCKS:
                        positions.pop(next(iter(positions)))
            i = index.get(txid)
            if i is None or i == 0:
                return None
            undo = state.read_undo(entry)
            coins = undo[i - 1] if i <= len(undo) else None
            if coins is None or len(coins) != len(tx.vin):
                return None
            return list(coins)

        try:
            spent = yield self._in_thread(spent_in_block)
        except (CancelledError, DatabaseUnreachable):
            raise
        except Exception:
            # Undo data missing (pruned) or unreadable: the object without input values.
            return None
        return spent

    @inlineCallbacks
    def getutxos(self, part: str, body: bytes = b""):
        """``part`` is what follows ``getutxos`` (``""`` or ``/...``) with the suffix;
        ``body`` the request's, holding the outpoints for ``.bin``/``.hex`` (Core's order
        of checks: path, empty request, format and body, count)."""
        param, fmt = split_format(part)
        segments = [s for s in param.split("/")[1:]] if param.startswith("/") else (
            [] if param == "" else None)
        if segments is None:
            raise NoSuchPath()
        if segments and segments[-1] == "":
            segments.pop()
        if not segments and not body:
            raise RESTError(HTTP_BAD_REQUEST, "Error: empty request")
        check_mempool, outpoints = parse_outpoints(segments) if segments else (False, [])
        if fmt in (BIN, HEX) and body:
            if segments:
                raise RESTError(HTTP_BAD_REQUEST, "Combination of URI scheme inputs and raw "
                                "post data is not allowed")
            data = parse_hex_body(body) if fmt == HEX else body
            if data:
                check_mempool, outpoints = parse_posted_outpoints(data)
        elif check_format(fmt, ALL_FORMATS) == JSON and not segments:
            raise RESTError(HTTP_BAD_REQUEST, "Error: empty request")
        check_outpoint_count(outpoints)
        # With checkmempool: pool outputs count as unspent and pool spends as spent (Core).
        pool = self.pool_service.pool if check_mempool else None
        tip, coins = yield self.chain.call(
            lambda cs: (cs.tip, coins_with_pool(cs, pool, outpoints, hide_spent=True)))
        found = [coin is not None for coin in coins]
        unspent = [coin for coin in coins if coin is not None]
        if fmt == JSON:
            return json_body(getutxos_json(tip.height, tip.hash, found, unspent,
                                           self.chain.params))
        return binary_body(fmt, getutxos_bin(tip.height, tip.hash, found, unspent))

    # -- status

    def chaininfo(self, part: str) -> Reply:
        name, _ = parse_format(part, JSON_ONLY)
        if name != "chaininfo":
            raise NoSuchPath()
        view = self.chain.snapshot()
        status = self.chain.status(view)
        cached = self._chaininfo
        if cached is None or cached[0] is not view or cached[1] != status:
            # The object depends on the snapshot and the status only (no clock): pollers
            # asking again between blocks get the same bytes without a render.
            cached = self._chaininfo = (view, status, json_body(
                chain_info_json(view, self.chain.params, status)))
        return cached[2]

    def mempool(self, part: str) -> Reply:
        """``info`` or ``contents``: the same objects getmempoolinfo and getrawmempool give."""
        name, _ = parse_format(part, JSON_ONLY)
        service = self.pool_service
        if name == "info":
            return json_body(mempool_info_json(
                service.pool, service.policy.min_relay_fee.sat_per_kb))
        if name == "contents":
            height = self.chain.state.height
            return self._in_thread(
                lambda: json_body(mempool_contents_json(service.pool, height)))
        raise NoSuchPath()

    def openapi(self, part: str) -> Reply:
        """This interface's OpenAPI description (coin/rest/openapi.py), made once."""
        parse_format(part, JSON_ONLY)
        if self._openapi is None:
            # Imported here: ``python -m coin.rest.openapi`` must not find it loaded already.
            from coin.rest.openapi import document_bytes
            self._openapi = document_bytes()
        return (CONTENT_TYPES[JSON], self._openapi)


# ---------------------------------------------------------------- HTTP


def _exact(name: str, path: str) -> Optional[str]:
    """``path`` if it is ``name`` or ``name.<anything>``; None otherwise (no prefix match)."""
    if path == name or path.startswith(name + "."):
        return path
    return None


def _is_getutxos(path: str) -> bool:
    return path == "getutxos" or path.startswith(("getutxos/", "getutxos."))


#: Endpoints matched by a path prefix (the longer prefix first), by name.
_PREFIXED = ("block/notxdetails", "block", "headers", "tx", "blockhashbyheight")
#: Endpoints named by their whole path, ``<name>.<fmt>``.
_WHOLE = ("chaininfo", "mempool/info", "mempool/contents", "openapi")
#: Every endpoint's name: the metrics label, and what doc/rest-openapi.json must describe.
ENDPOINTS = _PREFIXED + ("getutxos",) + _WHOLE
#: Endpoints whose answers are the same while :meth:`RESTHandlers.stamp` is, by what they
#: read: the snapshot's chain alone; and blocks' stored data; and the memory pool; the
#: snapshot and the node's status.
STAMPED_ENDPOINTS = {"headers": "chain", "blockhashbyheight": "chain",
                     "block/notxdetails": "data", "block": "data", "tx": "pool",
                     "chaininfo": "status"}
#: Request paths whose endpoint (and metrics label) is remembered.
ROUTE_CACHE_PATHS = 512
#: The metrics label of a path no endpoint serves.
UNKNOWN_ENDPOINT = "unknown"


@lru_cache(maxsize=ROUTE_CACHE_PATHS)
def endpoint(path: str) -> Optional[Tuple[str, str]]:
    """The endpoint serving ``path`` (what follows ``/rest/``) and the part its handler
    reads, or None: ``block/<hash>.json`` -> ``("block", "<hash>.json")``.  Remembered for
    the last paths asked (pollers ask the same ones again and again)."""
    for name in _PREFIXED:
        if path.startswith(name + "/"):
            return name, path[len(name) + 1:]
    if _is_getutxos(path):
        return "getutxos", path[len("getutxos"):]
    for name in _WHOLE:
        if _exact(name, path):
            return name, path[len(name) - len(name.rpartition("/")[2]):]
    return None


@lru_cache(maxsize=ROUTE_CACHE_PATHS)
def endpoint_label(uri: bytes) -> str:
    """The bounded metrics label of a request target (never the raw path)."""
    if not uri.startswith(b"/rest/"):
        return UNKNOWN_ENDPOINT
    found = endpoint(uri[len(b"/rest/"):].decode("utf-8", "replace"))
    return found[0] if found is not None else UNKNOWN_ENDPOINT


class RESTResource(resource.Resource):
    """The ``/rest`` tree; no authentication (Core serves REST to anyone allowed in)."""

    isLeaf = True
    serves_lean_requests = True

    def __init__(self, chain: ChainAccess, mempool: MempoolService, *, warmup: Any = None,
                 pruned: Optional[Callable[[BlockIndexEntry], bool]] = None,
                 observe: Optional[Callable[[str, int], None]] = None) -> None:
        """``observe(endpoint, status)`` is told of every reply (the node's metrics)."""
        super().__init__()
        self.handlers = h = RESTHandlers(chain, mempool, pruned=pruned)
        self._warmup = warmup
        self._observe = observe
        self._routes: Dict[str, Callable[[str, bytes], Reply]] = {
            "block/notxdetails": lambda part, body: h.block(part, False),
            "block": lambda part, body: h.block(part, True),
            "headers": lambda part, body: h.headers(part),
            "tx": lambda part, body: h.tx(part),
            "blockhashbyheight": lambda part, body: h.blockhash_by_height(part),
            "getutxos": h.getutxos,
            "chaininfo": lambda part, body: h.chaininfo(part),
            "mempool/info": lambda part, body: h.mempool(part),
            "mempool/contents": lambda part, body: h.mempool(part),
            "openapi": lambda part, body: h.openapi(part),
        }

    def route(self, path: str, body: bytes = b"") -> Reply:
        """Dispatch the path after ``/rest/`` (``body``: getutxos's); raises RESTError or
        NoSuchPath."""
        found = endpoint(path)
        if found is None:
            raise NoSuchPath()
        name, part = found
        return self._routes[name](part, body)

    def render(self, request: server.Request) -> Any:
        # Core hands its handlers the request target with the query string: it is part
        # of the last path parameter (``<hash>.json?x=y`` is an invalid hash).
        raw = request.uri
        path = raw[len(b"/rest/"):].decode("utf-8", "replace")
        # getutxos takes its outpoints from a POST body too; other paths keep GET/HEAD.
        posted = request.method == b"POST" and _is_getutxos(path)
        if request.method not in (b"GET", b"HEAD") and not posted:
            self._reply(request, HTTP_BAD_METHOD, b"text/plain",
                        b"Only GET and HEAD requests are supported for REST\r\n")
            return server.NOT_DONE_YET
        if self._warmup is not None and self._warmup.message is not None:
            self._reply(request, HTTP_SERVICE_UNAVAILABLE, b"text/plain",
                        b"Service temporarily unavailable: %s\r\n"
                        % self._warmup.message.encode("utf-8"))
            return server.NOT_DONE_YET
        if not raw.startswith(b"/rest/"):
            self._reply(request, HTTP_NOT_FOUND, None, b"")
            return server.NOT_DONE_YET
        body = b""
        if _is_getutxos(path) and request.content is not None:
            request.content.seek(0)
            body = request.content.read()
        found = endpoint(path) if not posted and hasattr(request, "keep_answer") else None
        try:
            # Taken before the answer is made: a change while it is made moves the stamp.
            stamp = self.answer_stamp(found[0]) if found is not None else None
        except Exception:
            stamp = None  # the answer is kept without one: a repeat is routed again
        try:
            answer = self.route(path, body)
        except Exception:
            answer = Deferred()
            answer.errback(Failure())
        if not isinstance(answer, Deferred):
            if found is not None:
                request.keep_answer(KeptAnswerCheck(self, path, raw, answer, found[0], stamp))
            self._reply(request, 200, answer[0], answer[1])
            return server.NOT_DONE_YET
        lost = cancel_when_gone(request, answer)

        def send(body: Body) -> None:
            if not lost:
                self._reply(request, 200, body[0], body[1])

        def failed(reason: Failure) -> None:
            if lost or reason.check(CancelledError):
                return
            if reason.check(RESTError):
                error = reason.value
                self._reply(request, error.status, b"text/plain",
                            error.message.encode("utf-8", "replace") + b"\r\n")
            elif reason.check(NoSuchPath):
                self._reply(request, HTTP_NOT_FOUND, None, b"")
            elif reason.check(DatabaseUnreachable):
                # What RPC answers -28 (RPC_IN_WARMUP) is REST's 503, as during start-up.
                self._reply(request, HTTP_SERVICE_UNAVAILABLE, b"text/plain",
                            b"Service temporarily unavailable: %s\r\n"
                            % DatabaseUnreachable.message.encode("ascii"))
            else:
                _log.failure("REST request {uri} failed", reason,
                             uri=request.uri.decode("ascii", "replace"))
                self._reply(request, HTTP_INTERNAL_SERVER_ERROR, b"text/plain",
                            b"Internal error\r\n")

        answer.addCallbacks(send, failed)
        return server.NOT_DONE_YET

    def answer_stamp(self, name: str) -> Optional[Tuple[Any, ...]]:
        """:meth:`RESTHandlers.stamp` of endpoint ``name`` (a front end adds its own
        condition)."""
        return self.handlers.stamp(name)

    def routes_to(self, path: str, body: Body) -> bool:
        """Whether ``path`` routed now is answered ``body`` at once: every check of the
        general path (a front end's look for a newer commit, pruning, the caches' tip) made
        as it would be."""
        try:
            answer = self.route(path)
        except Exception:
            return False
        if isinstance(answer, Deferred):
            answer.addErrback(lambda _: None)  # the request is routed again, the usual way
            return False
        return answer == body

    def kept_answer_given(self, uri: bytes) -> None:
        """A kept answer was sent again: counted as a reply."""
        if self._observe is not None:
            self._observe(endpoint_label(uri), 200)

    def may_answer_kept(self) -> bool:
        """Whether kept answers may be sent at all now (not during warm-up)."""
        return self._warmup is None or self._warmup.message is None

    def _reply(self, request: server.Request, status: int, content_type: Optional[bytes],
               body: bytes) -> None:
        if self._observe is not None:
            self._observe(endpoint_label(request.uri), status)
        request.setResponseCode(status)
        if content_type is not None:
            request.setHeader(b"Content-Type", content_type)
        request.setHeader(b"Content-Length", b"%d" % len(body))
        request.write(body)
        request.finish()


class KeptAnswerCheck:
    """Whether a repeat of a GET or HEAD answered ``body`` at once would be answered it again
    now (``still(channel)`` of LeanRequest.keep_answer: the channel then sends the kept
    answer, unparsed; doc/rest.md, "Kept answers").

    For an endpoint with a stamp (:meth:`RESTHandlers.stamp`) an unchanged stamp says so in
    a few attribute reads: the answer's inputs have not changed since it was made. Else,
    and whenever the stamp moved, the path is routed again and must give an equal body at
    once; the new stamp is kept only then. Counted as a reply when it holds.
    """

    __slots__ = ("resource", "path", "uri", "body", "name", "stamp")

    def __init__(self, resource: RESTResource, path: str, uri: bytes, body: Body, name: str,
                 stamp: Optional[Tuple[Any, ...]]) -> None:
        self.resource = resource
        self.path = path
        self.uri = uri
        self.body = body
        self.name = name
        self.stamp = stamp

    def __call__(self, channel: Any) -> bool:
        resource = self.resource
        if not resource.may_answer_kept():
            return False
        now = None
        if self.stamp is not None:
            try:
                now = resource.answer_stamp(self.name)
            except Exception:
                return False  # routed the usual way, which answers the error
            if now == self.stamp:
                resource.kept_answer_given(self.uri)
                return True
        if not resource.routes_to(self.path, self.body):
            return False
        self.stamp = now  # taken before routing, as the first one was
        resource.kept_answer_given(self.uri)
        return True
