"""``masternode.conf``: ``alias IP:port masternodeprivkey collateral_txid collateral_index``.

Read as the reference node reads it: blank lines and lines whose first word starts with
``#`` are skipped, extra words after the fifth are ignored, a missing file is created with
the reference's header.  Unlike the reference (which refuses to start), a bad line is
reported -- with the reference's message naming the line -- and skipped, so one typo does
not take the node down; the good lines still load.
"""

from __future__ import annotations

import os
from typing import List, NamedTuple, Tuple

from coin.config.hostport import split_host_port

HEADER = ("# Masternode config file\n"
          "# Format: alias IP:port masternodeprivkey collateral_output_txid "
          "collateral_output_index\n"
          "# Example: mn1 127.0.0.2:19999 93HaYBVUCYjEMeeH1Y4sBGLALQZE1Yc1K64xiqgX37tGBDQL8Xg "
          "2bcd3c84c84f87eaa86e4e56834c92927a07f9e18718810b92e0d0324456a67c 0\n")


class MasternodeEntry(NamedTuple):
    """One line, kept as text (list-conf shows it verbatim, as the reference does)."""

    alias: str
    address: str
    private_key: str
    txid: str
    index: str


def _where(number: int, line: str) -> str:
    return 'Line: %d\n"%s"' % (number, line)


def _check_port(address: str, main_port: int, is_main: bool) -> str:
    """The reference's port rule: main needs the main port, the others must avoid it."""
    host, port = split_host_port(address, 0)
    if port == 0 or not host:
        return "Failed to parse host:port string"
    if is_main and port != main_port:
        return "Invalid port detected in masternode.conf\nPort: %d" % port
    if not is_main and port == main_port:
        return "Invalid port detected in masternode.conf"
    return ""


def parse_masternode_conf(text: str, main_port: int, is_main: bool
                          ) -> Tuple[List[MasternodeEntry], List[str]]:
    """The entries of the good lines and one error message per bad line."""
    entries: List[MasternodeEntry] = []
    errors: List[str] = []
    for number, line in enumerate(text.split("\n"), 1):
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        if len(words) < 5:
            errors.append("Could not parse masternode.conf\n" + _where(number, line))
            continue
        problem = _check_port(words[1], main_port, is_main)
        if problem:
            errors.append(problem + "\n" + _where(number, line))
            continue
        entries.append(MasternodeEntry(*words[:5]))
    return entries, errors


def read_masternode_conf(path: str, main_port: int, is_main: bool
                         ) -> Tuple[List[MasternodeEntry], List[str]]:
    """Parse ``path``; a missing file is created with the reference's header (no entries)."""
    try:
        with open(path, "r", encoding="utf-8", errors="replace") as f:
            text = f.read()
    except FileNotFoundError:
        try:
            with open(path, "a", encoding="utf-8") as f:
                f.write(HEADER)
        except OSError:
            pass
        return [], []
    return parse_masternode_conf(text, main_port, is_main)


def conf_path(option: str, datadir: str) -> str:
    """-mnconf: relative paths are under the network's data directory."""
    return option if os.path.isabs(option) else os.path.join(datadir, option)
