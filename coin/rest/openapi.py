"""The OpenAPI 3.1 description of ``/rest``, built here as data: one source for the
``/rest/openapi.json`` reply and the committed doc/rest-openapi.json.

``python -m coin.rest.openapi`` rewrites doc/rest-openapi.json (a test fails while the
committed file differs from :func:`document`).  Paths, formats and error statuses follow
doc/rest.md; a test checks that every endpoint the resource routes is described here and
that every path described here answers on a real node.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Dict, List, Optional, Sequence

from coin import __version__
from coin.rest.formats import ALL_FORMATS, CONTENT_TYPES, JSON, JSON_ONLY

#: Where the committed copy lives, relative to the repository root.
DOC_PATH = os.path.join("doc", "rest-openapi.json")

_HEX64 = {"type": "string", "pattern": "^[0-9a-fA-F]{64}$"}
_ERROR_TEXT = {"text/plain": {"schema": {"type": "string"}}}


def _error(description: str) -> Dict[str, Any]:
    return {"description": description + " (text/plain, ending with CR LF)",
            "content": _ERROR_TEXT}


_FORMAT_404 = "`output format not found (available: ...)`"


def _param(name: str, schema: Dict[str, Any], description: str) -> Dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": schema,
            "description": description}


def _format_param(formats: Sequence[str]) -> Dict[str, Any]:
    return _param("format", {"type": "string", "enum": list(formats)},
                  "Output format: json, hex (text) or bin (raw bytes)")


_HASH = _param("hash", _HEX64, "Block hash (64 hex digits, either case)")


def _ok(json_schema: Dict[str, Any], formats: Sequence[str], what: str) -> Dict[str, Any]:
    content: Dict[str, Any] = {}
    for fmt in formats:
        schema = json_schema if fmt == JSON else {"type": "string"}
        if fmt == "bin":
            schema = {"type": "string", "contentMediaType": "application/octet-stream"}
        content.setdefault(CONTENT_TYPES[fmt].decode("ascii"), {"schema": schema})
    return {"description": what, "content": content}


def _operation(operation_id: str, summary: str, parameters: List[Dict[str, Any]],
               ok: Dict[str, Any], errors: Dict[str, str]) -> Dict[str, Any]:
    responses: Dict[str, Any] = {"200": ok}
    for status, description in sorted(errors.items()):
        responses[status] = _error(description)
    responses["500"] = _error("`Internal error`: an unexpected failure, logged by the node")
    responses["503"] = _error("`Service temporarily unavailable: <step>` while the node starts; "
                              "`... chain database unreachable` while its PostgreSQL server "
                              "is away")
    return {"operationId": operation_id, "summary": summary, "parameters": parameters,
            "responses": responses}


def _block_path(operation_id: str, summary: str) -> Dict[str, Any]:
    return {"get": _operation(
        operation_id, summary, [_HASH, _format_param(ALL_FORMATS)],
        _ok({"type": "object"}, ALL_FORMATS, "The block: getblock's object (verbosity 2, or 1 "
            "without tx details), or its serialization"),
        {"400": "`Invalid hash: <hash>`",
         "404": "`<hash> not found`, `<hash> not available (pruned data)`, or " + _FORMAT_404})}


_OUTPOINTS = _param("outpoints", {"type": "string", "pattern": "^[0-9a-fA-F]{64}-[+-]?[0-9]+"
                                  "(/[0-9a-fA-F]{64}-[+-]?[0-9]+)*$"},
                    "Up to 15 outpoints `<txid>-<n>`, separated by `/`")
_GETUTXOS_ERRORS = {
    "400": "`Parse error`, `Error: empty request`, `Error: max outpoints exceeded (max: 15, "
           "tried: N)` or `Combination of URI scheme inputs and raw post data is not allowed`",
    "404": _FORMAT_404,
}
_GETUTXOS_OK = _ok({"type": "object", "required": ["chainHeight", "chaintipHash", "bitmap",
                                                   "utxos"]},
                   ALL_FORMATS, "The chain tip, a bitmap of the outpoints found unspent, and "
                   "those outputs")


def _getutxos_path(operation_id: str, check_mempool: bool) -> Dict[str, Any]:
    summary = ("Unspent outputs, the mempool's included (its outputs unspent, its spends spent)"
               if check_mempool else "Unspent outputs of the UTXO set")
    return {"get": _operation(operation_id, summary, [_OUTPOINTS, _format_param(ALL_FORMATS)],
                              _GETUTXOS_OK, _GETUTXOS_ERRORS)}


def _json_path(operation_id: str, summary: str, schema: Dict[str, Any]) -> Dict[str, Any]:
    return {"get": _operation(operation_id, summary, [], _ok(schema, JSON_ONLY, summary),
                              {"404": _FORMAT_404 + " (json only)"})}


def _paths() -> Dict[str, Any]:
    posted = _operation(
        "getutxosPosted", "Unspent outputs of the outpoints in the body (Core 0.17's reading: "
        "the check-mempool flag comes from the body's length prefix, see doc/rest.md)",
        [_format_param(("bin", "hex"))], _GETUTXOS_OK, _GETUTXOS_ERRORS)
    posted["requestBody"] = {"required": True, "content": {
        "application/octet-stream": {"schema": {"type": "string"}},
        "text/plain": {"schema": {"type": "string"}}}}
    return {
        "/rest/block/{hash}.{format}": _block_path("getBlock", "A block with its transactions"),
        "/rest/block/notxdetails/{hash}.{format}": _block_path(
            "getBlockNoTxDetails", "A block with transaction ids only"),
        "/rest/headers/{count}/{hash}.{format}": {"get": _operation(
            "getHeaders", "Up to <count> headers of the active chain from <hash> on",
            [_param("count", {"type": "integer", "minimum": 1, "maximum": 2000},
                    "How many headers (1 to 2000)"), _HASH, _format_param(ALL_FORMATS)],
            _ok({"type": "array", "items": {"type": "object"}}, ALL_FORMATS,
                "getblockheader's objects, or 80-byte headers (empty for an unknown hash)"),
            {"400": "`Header count out of range: <count>` or `Invalid hash: <hash>`",
             "404": _FORMAT_404})},
        "/rest/tx/{txid}.{format}": {"get": _operation(
            "getTx", "A transaction (the mempool's first, then -txindex or an unspent output)",
            [_param("txid", _HEX64, "Transaction id"), _format_param(ALL_FORMATS)],
            _ok({"type": "object"}, ALL_FORMATS, "getrawtransaction's verbose object, or the "
                "serialization"),
            {"400": "`Invalid hash: <txid>`", "404": "`<txid> not found` or " + _FORMAT_404})},
        "/rest/getutxos/{outpoints}.{format}": _getutxos_path("getUtxos", False),
        "/rest/getutxos/checkmempool/{outpoints}.{format}": _getutxos_path(
            "getUtxosCheckMempool", True),
        "/rest/getutxos.{format}": {"post": posted},
        "/rest/blockhashbyheight/{height}.{format}": {"get": _operation(
            "getBlockHashByHeight", "The active chain's block hash at a height",
            [_param("height", {"type": "integer", "minimum": 0}, "Block height"),
             _format_param(ALL_FORMATS)],
            _ok({"type": "object", "properties": {"blockhash": _HEX64},
                 "required": ["blockhash"]}, ALL_FORMATS, "The hash"),
            {"400": "`Invalid height: <height>`",
             "404": "`Block height out of range` or " + _FORMAT_404})},
        "/rest/chaininfo.json": _json_path("getChainInfo", "getblockchaininfo's object",
                                           {"type": "object"}),
        "/rest/mempool/info.json": _json_path("getMempoolInfo", "getmempoolinfo's object",
                                              {"type": "object"}),
        "/rest/mempool/contents.json": _json_path(
            "getMempoolContents", "getrawmempool's verbose object", {"type": "object"}),
        "/rest/openapi.json": _json_path("getOpenAPI", "This description", {"type": "object"}),
    }


def document() -> Dict[str, Any]:
    """The OpenAPI 3.1 description of ``/rest``."""
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "coind REST interface",
            "version": __version__,
            "description": (
                "Core's read-only REST interface, served under /rest on the RPC port without "
                "RPC credentials (-rest=0 turns it off). Every GET path answers HEAD too; "
                "other methods get 405. JSON and hex bodies end with a newline, error text "
                "with CR LF. See doc/rest.md."),
        },
        "paths": _paths(),
    }


def document_bytes() -> bytes:
    """:func:`document` as committed in doc/rest-openapi.json (sorted keys, indented)."""
    return (json.dumps(document(), indent=2, sort_keys=True) + "\n").encode("utf-8")


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Write doc/rest-openapi.json (or the path given) from :func:`document`."""
    args = list(sys.argv[1:] if argv is None else argv)
    path = args[0] if args else DOC_PATH
    with open(path, "wb") as f:
        f.write(document_bytes())
    print("wrote %s" % path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
