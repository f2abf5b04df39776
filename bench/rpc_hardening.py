"""Password guessing and the reactor stall under a large body, for issue #11 (F3, F8).

Usage: ``python bench/rpc_hardening.py [repo]``: starts a regtest coind from ``repo``
(default: this checkout; give another checkout to measure it "before") and prints one
JSON object, each figure the median of 3 runs:

- ``guesses_keepalive`` / ``guesses_new_connections``: wrong-password answers per second
  for one client with 64 concurrent connections, kept alive or new for each guess (5 s);
- ``stall_s``: the longest latency of a small request (``getblockcount`` every 10 ms)
  while a 2-million-key, ~21 MB request body is handled; ``large_request_s`` its own time.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from typing import Dict, Tuple

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                       os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

from tests.nodeharness import NodeProcess  # noqa: E402  (from the repo measured)

THREADS = 64
SECONDS = 5.0


def _headers(password: str) -> Dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(("u:" + password).encode()).decode()}


def guesses_per_second(port: int, keepalive: bool) -> float:
    stop = time.monotonic() + SECONDS
    answered = []

    def client(n: int) -> None:
        conn = None
        i = 0
        while time.monotonic() < stop:
            try:
                if conn is None or not keepalive:
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                conn.request("POST", "/", body=b'{"method":"uptime"}',
                             headers=_headers("wrong%d-%d" % (n, i)))
                response = conn.getresponse()
                response.read()
                i += 1
                if response.status == 401 and time.monotonic() < stop:
                    answered.append(1)
                if not keepalive:
                    conn.close()
            except OSError:
                conn = None

    threads = [threading.Thread(target=client, args=(n,)) for n in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return len(answered) / SECONDS


def stall(port: int, body: bytes) -> Tuple[float, float]:
    worst = [0.0]
    done = threading.Event()

    def probe() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        while not done.is_set():
            began = time.monotonic()
            conn.request("POST", "/", body=b'{"method":"getblockcount"}', headers=_headers("p"))
            conn.getresponse().read()
            worst[0] = max(worst[0], time.monotonic() - began)
            time.sleep(0.01)

    thread = threading.Thread(target=probe)
    thread.start()
    time.sleep(0.3)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    began = time.monotonic()
    conn.request("POST", "/", body=body, headers=_headers("p"))
    conn.getresponse().read()
    large = time.monotonic() - began
    time.sleep(0.5)
    done.set()
    thread.join()
    return worst[0], large


def main() -> None:
    node = NodeProcess.start(tempfile.mkdtemp(prefix="bench-rpc-hardening"),
                             ["-connect=0", "-listen=1", "-disablewallet"])
    try:
        result: Dict[str, object] = {"repo": ROOT}
        for name, keepalive in (("guesses_keepalive", True), ("guesses_new_connections", False)):
            runs = []
            for _ in range(3):
                runs.append(guesses_per_second(node.rpcport, keepalive))
                time.sleep(3)  # let the previous run's pending answers drain
            result[name] = round(statistics.median(runs), 1)
        body = ("{" + ",".join('"%x":%d' % (i, i % 10) for i in range(2_000_000)) + "}").encode()
        runs = [stall(node.rpcport, body) for _ in range(3)]
        result["body_bytes"] = len(body)
        result["stall_s"] = round(statistics.median(r[0] for r in runs), 3)
        result["large_request_s"] = round(statistics.median(r[1] for r in runs), 2)
        print(json.dumps(result))
    finally:
        node.stop()


if __name__ == "__main__":
    main()
