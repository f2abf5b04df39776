"""ZeroMQ notification throughput and what publishing adds to block connect.

    python bench/zmq.py [--burst 5000] [--runs 3]

Uses the benchmark chain of bench/chaindata.py (built once under $COIN_BENCH_DIR) and a
subscriber in a separate process (a SUB socket per address, as a Core user's program).
Prints one JSON object:

* ``rawtx_burst``: ``--burst`` transactions announced as the mempool announces them
  (``NotifyService.transaction`` from a worker thread), hashtx and rawtx on one address:
  rawtx notifications received per second (first publish to last receipt), with the
  default high water mark (1000, drops counted) and with none (``hwm=0``), the median
  of ``--runs`` bursts (and every run's rate and count);
* ``block_connect``: fresh chain states fed the same blocks, alternately without
  notifications and with all four Core topics published to a live subscriber (the same run,
  ``--runs`` times each after a warm-up): wall seconds per block connect (the median block
  of a run, then the median run) for the coinbase-only blocks and for the 2,000-transaction
  blocks, and the process's CPU seconds for the whole feed (with notifications, until the
  publisher has sent everything: the publisher thread's work is part of the cost), each
  with the ratio with/without. On a loaded machine the CPU figure is the steadier one.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Callable, Dict, List, Optional

# Run as a script, this file's directory comes first on sys.path and its name would hide
# pyzmq's ``zmq``: the repository root replaces it.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [os.path.dirname(_HERE)] + [p for p in sys.path if os.path.abspath(p or ".") != _HERE]

from bench import chaindata  # noqa: E402
from coin.config.args import Config  # noqa: E402
from coin.config.node import node_options  # noqa: E402
from coin.notify.service import NotifyService  # noqa: E402
from coin.primitives.block import Block  # noqa: E402
from coin.testing.chainbuilder import open_chain  # noqa: E402
from tests.nodeharness import free_port  # noqa: E402

#: The subscriber process: counts messages per topic until ``quiet`` seconds pass without
#: one, then prints the counts and the time of the last message.
SUBSCRIBER = r"""
import json, sys, time, zmq
context = zmq.Context()
sockets = []
for address in sys.argv[2:]:
    s = context.socket(zmq.SUB); s.setsockopt(zmq.SUBSCRIBE, b""); s.setsockopt(zmq.RCVHWM, 0)
    s.connect(address); sockets.append(s)
poller = zmq.Poller()
for s in sockets:
    poller.register(s, zmq.POLLIN)
print("ready", flush=True)
for s in sockets:  # the publisher probes until each connection is up (ZeroMQ's slow joiner)
    s.recv_multipart()
print("joined", flush=True)
counts, last = {}, None
quiet_ms = int(float(sys.argv[1]) * 1000)
while True:
    ready = poller.poll(quiet_ms if last is not None else 60000)
    if not ready:
        break
    for s, _ in ready:
        while True:
            try:
                topic, body, seq = s.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                break
            if body == b"probe":
                continue
            counts[topic.decode()] = counts.get(topic.decode(), 0) + 1
            last = time.time()
print(json.dumps({"counts": counts, "last": last}), flush=True)
"""


class Subscriber:
    """The subscriber process; :meth:`result` waits for it to fall quiet."""

    def __init__(self, addresses: List[str], quiet: float = 1.0) -> None:
        self.process = subprocess.Popen([sys.executable, "-c", SUBSCRIBER, str(quiet)] + addresses,
                                        stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        assert self.process.stdout.readline().strip() == "ready"

    def join(self, probe: Callable[[], None]) -> None:
        """Probe until the subscriber has heard every address."""
        assert self.process.stdout is not None
        while not select.select([self.process.stdout], [], [], 0.05)[0]:
            probe()
        assert self.process.stdout.readline().strip() == "joined"  # probes are not counted

    def result(self) -> Dict[str, Any]:
        out, _ = self.process.communicate(timeout=600)
        return json.loads(out)


def notify_service(lines: List[str]) -> NotifyService:
    config = Config(node_options(), {})
    config.parse_command_line(["-" + line for line in lines])
    return NotifyService(config, reactor=None)


class Hooks:
    """The chain state's publisher as ValidationService runs it: worker hooks in order."""

    def __init__(self) -> None:
        self.hooks: List[Callable] = []
        self.on_object: List[Callable] = []
        self.on_vote: List[Callable] = []
        self.alert_listeners: List[Callable] = []

    def add_worker_hook(self, hook: Callable) -> None:
        self.hooks.append(hook)

    def add_listener(self, listener: Callable) -> None:
        pass  # no pool in this benchmark

    def publish(self, chain: Any) -> Callable[[list], None]:
        def run(events: list) -> None:
            for hook in self.hooks:
                hook(chain, events)
        return run


def rawtx_burst(txs: list, hwm: Optional[int]) -> Dict[str, Any]:
    address = "tcp://127.0.0.1:%d" % free_port()
    lines = ["zmqpubhashtx=" + address, "zmqpubrawtx=" + address]
    if hwm is not None:
        lines += ["zmqpubhashtxhwm=%d" % hwm, "zmqpubrawtxhwm=%d" % hwm]
    notify = notify_service(lines)
    notify.zmq.start()
    subscriber = Subscriber([address], quiet=5.0)
    subscriber.join(lambda: notify.zmq.publish("hashtx", lambda: b"probe"))

    started = time.time()
    worker = threading.Thread(target=lambda: [notify.transaction(tx) for tx in txs])
    worker.start()
    worker.join()
    queued = time.time() - started
    result = subscriber.result()  # before closing: a socket closes with linger 0, as Core's
    notify.zmq.stop()
    received = result["counts"].get("rawtx", 0)
    elapsed = result["last"] - started
    return {"hwm": hwm if hwm is not None else 1000, "published": len(txs), "received": received,
            "dropped": len(txs) - received, "seconds": round(elapsed, 3),
            "rawtx_per_s": round(received / elapsed, 1),
            "worker_seconds_to_queue": round(queued, 4)}


def connect_blocks(blocks: List[Block], split: int, workdir: str,
                   notify: Optional[NotifyService]) -> Dict[str, float]:
    """Feed ``blocks`` to a fresh chain state: the median wall seconds of a block connect and
    the process's CPU seconds per block, for the blocks before ``split`` and after (with
    notifications, CPU until the publisher has sent everything: its work is the cost)."""
    chain = open_chain(tempfile.mkdtemp(dir=workdir))
    if notify is not None:
        hooks = Hooks()
        notify.watch_disconnects(hooks)
        notify.attach(hooks, hooks, hooks, None, hooks, lambda: False)
        chain.set_publisher(hooks.publish(chain))
    found = {}
    for name, part in (("small", blocks[:split]), ("spend", blocks[split:])):
        times = []
        cpu = time.process_time()
        for block in part:
            start = time.perf_counter()
            chain.process_block(block)
            times.append(time.perf_counter() - start)
        if notify is not None:
            notify.zmq.flush()
        found[name + "_wall"] = statistics.median(times)
        found[name + "_cpu"] = (time.process_time() - cpu) / len(part)
    chain.close()
    return found


def block_connect(blocks: List[Block], split: int, workdir: str, runs: int) -> Dict[str, Any]:
    """Without and with notifications alternately, ``runs`` times each."""
    figures: Dict[str, Dict[str, List[float]]] = {"without": {}, "with": {}}
    received = None
    connect_blocks(blocks, split, workdir, None)  # warm-up: caches, imports
    for _ in range(runs):
        for mode in ("without", "with"):
            notify = subscriber = None
            if mode == "with":
                hashes = "tcp://127.0.0.1:%d" % free_port()
                raws = "tcp://127.0.0.1:%d" % free_port()
                notify = notify_service(["zmqpubhashblock=" + hashes, "zmqpubhashtx=" + hashes,
                                         "zmqpubrawblock=" + raws, "zmqpubrawtx=" + raws,
                                         "zmqpubhashblockhwm=0", "zmqpubrawblockhwm=0"])
                notify.zmq.start()
                subscriber = Subscriber([hashes, raws], quiet=5.0)
                subscriber.join(lambda: notify.zmq.publish_batch(
                    [("hashblock", lambda: b"probe"), ("rawblock", lambda: b"probe")]))
            os.sync()  # both modes start with the previous run's writes on disk (fsync costs)
            for key, value in connect_blocks(blocks, split, workdir, notify).items():
                figures[mode].setdefault(key, []).append(value)
            if subscriber is not None:
                received = subscriber.result()["counts"]
                notify.zmq.stop()

    def summary(key: str) -> Dict[str, float]:
        without = statistics.median(figures["without"][key])
        with_ = statistics.median(figures["with"][key])
        return {"without": round(without, 5), "with": round(with_, 5),
                "ratio_with_to_without": round(with_ / without, 3)}

    return {"coinbase_only_blocks": split, "spend_blocks": len(blocks) - split,
            "txs_per_spend_block": chaindata.SPENDS_PER_BLOCK, "runs": runs,
            "coinbase_only": {"wall_seconds_per_block": summary("small_wall"),
                              "cpu_seconds_per_block": summary("small_cpu")},
            "spend": {"wall_seconds_per_block": summary("spend_wall"),
                      "cpu_seconds_per_block": summary("spend_cpu")},
            "messages_received_last_run": received}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--burst", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    workdir = os.environ.get("COIN_BENCH_DIR") or tempfile.mkdtemp(prefix="coin-bench-")
    blocks = chaindata.load(chaindata.build(workdir))
    split = len([b for b in blocks if len(b.txs) <= chaindata.FANOUT_TXS + 1])
    burst_txs = [tx for b in blocks[split:] for tx in b.txs[1:]][:args.burst]
    bursts = []
    for hwm in (None, 0):
        tries = [rawtx_burst(burst_txs, hwm) for _ in range(args.runs)]
        median = sorted(tries, key=lambda t: t["rawtx_per_s"])[len(tries) // 2]
        bursts.append(dict(median, runs=args.runs,
                           rawtx_per_s_all=[t["rawtx_per_s"] for t in tries],
                           received_all=[t["received"] for t in tries]))
    result = {
        "benchmark": "zmq",
        "python": sys.version.split()[0],
        "rawtx_burst": bursts,
        "block_connect": block_connect(blocks, split, workdir, args.runs),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
