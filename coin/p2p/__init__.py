"""Peer-to-peer networking: the wire format, peers, headers-first sync and relay."""
