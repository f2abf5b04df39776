"""JSON views of the memory pool, shared by RPC (getmempoolinfo, getrawmempool,
getmempoolentry, ...) and REST (/mempool/info.json, /mempool/contents.json).

Entry objects carry the spec's fields in the spec's order, with Core 0.17's
extras where Core 0.17 (and the reference node) put them: the ``fees`` object
first, ``ancestorcount``/``ancestorsize``/``ancestorfees`` and ``wtxid`` before
``depends``, ``spentby`` after it; ``vsize`` follows ``size`` as in later Cores
(doc/mempool.md, doc/views.md).
"""

from __future__ import annotations

from typing import Iterable, List

from coin.mempool.pool import Mempool, MempoolEntry
from coin.primitives.hashes import hash_to_hex
from coin.views.amounts import amount_to_json, real_to_json
from coin.views.encode import JSONView


def mempool_entry_json(entry: MempoolEntry, height: int) -> JSONView:
    """One entry; ``height`` is the current tip height (for ``currentpriority``).

    The caller holds the pool's lock (family sets change under writers).
    ``fees`` repeats the flat fee fields in coins; ``vsize`` and ``wtxid`` equal
    ``size`` and the txid (no witness data).
    """
    fee = amount_to_json(entry.fee)
    modified_fee = amount_to_json(entry.modified_fee)
    return JSONView({
        "fees": {"base": fee, "modified": modified_fee,
                 "ancestor": amount_to_json(entry.fees_with_ancestors),
                 "descendant": amount_to_json(entry.fees_with_descendants)},
        "size": entry.size,
        "vsize": entry.size,
        "fee": fee,
        "modifiedfee": modified_fee,
        "time": entry.time,
        "height": entry.height,
        "startingpriority": real_to_json(entry.starting_priority),
        "currentpriority": real_to_json(entry.current_priority(height)),
        "descendantcount": entry.count_with_descendants,
        "descendantsize": entry.size_with_descendants,
        "descendantfees": entry.fees_with_descendants,
        "ancestorcount": entry.count_with_ancestors,
        "ancestorsize": entry.size_with_ancestors,
        "ancestorfees": entry.fees_with_ancestors,
        "wtxid": hash_to_hex(entry.txid),
        "depends": sorted(hash_to_hex(p.txid) for p in entry.parents),
        "spentby": sorted(hash_to_hex(c.txid) for c in entry.children),
    })


def mempool_entries_json(entries: Iterable[MempoolEntry], height: int) -> JSONView:
    """``{txid: entry}``: getrawmempool verbose and /mempool/contents.json."""
    return JSONView({hash_to_hex(e.txid): mempool_entry_json(e, height) for e in entries})


def mempool_contents_json(pool: Mempool, height: int) -> JSONView:
    with pool.lock:
        return mempool_entries_json(pool.sorted_entries(), height)


def mempool_txids_json(pool: Mempool) -> List[str]:
    return [hash_to_hex(txid) for txid in pool.txids()]


def mempool_info_json(pool: Mempool, min_relay_fee: int) -> JSONView:
    """getmempoolinfo and /mempool/info.json (``min_relay_fee`` in satoshis per kB).

    ``mempoolminfee`` is the larger of the rolling floor and the relay fee, as Core 0.17.
    """
    with pool.lock:
        return JSONView(size=len(pool), bytes=pool.total_size, usage=pool.total_usage,
                        maxmempool=pool.max_usage, mempoolminfee=amount_to_json(pool.relay_floor()),
                        minrelaytxfee=amount_to_json(min_relay_fee))
