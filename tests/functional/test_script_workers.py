"""-par worker processes of a real coind: how many, their size, restarts, no orphans."""

from __future__ import annotations

import os
import signal
import time
from typing import List

from twisted.trial.unittest import TestCase

from tests.nodeharness import MINER_ADDRESS, NodeProcess
from tests.unit.chain.test_script_workers import rss_mib, wait_gone


def script_workers(pid: int) -> List[int]:
    """Live ``coin.chain.scriptworker`` children of process ``pid``."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open("/proc/%s/cmdline" % name, "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z" and b"coin.chain.scriptworker" in cmdline:
            found.append(int(name))
    return sorted(found)


def wait_for(predicate, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    return predicate()


class ScriptWorkerProcessTests(TestCase):

    def start(self, *args: str) -> NodeProcess:
        node = NodeProcess.start(self.mktemp(), args)
        self.addCleanup(node.stop)
        return node

    def test_par_counts_workers_and_they_stay_small(self) -> None:
        assumed = "11" * 32
        for args, workers, lines in (
                (["-par=1"], 0, ["Using 1 processes for script verification",
                                 "Validating signatures for all blocks."]),
                (["-par=3", "-assumevalid=" + assumed], 2, [
                    "Using 3 processes for script verification",
                    "Assuming ancestors of block %s have valid signatures." % assumed])):
            node = self.start(*args)
            with open(os.path.join(node.datadir, "regtest", "debug.log")) as f:
                log = f.read()
            for line in lines:
                self.assertIn(line, log)
            pids = wait_for(lambda: len(script_workers(node.process.pid)) == workers
                            and script_workers(node.process.pid)) or []
            self.assertEqual(len(pids), workers, args)
            node.rpc("generatetoaddress", 1, MINER_ADDRESS)
            for pid in pids:
                self.assertLess(rss_mib(pid), 60)
            node.stop()

    def test_kill_9_leaves_no_worker_behind(self) -> None:
        node = self.start("-par=2")
        pids = wait_for(lambda: script_workers(node.process.pid))
        self.assertEqual(len(pids), 1)
        os.kill(node.process.pid, signal.SIGKILL)
        node.process.wait()
        for pid in pids:
            self.assertTrue(wait_gone(pid), "worker %d outlived kill -9 of the node" % pid)

    def test_a_dead_worker_is_replaced(self) -> None:
        node = self.start("-par=2")
        (old,) = wait_for(lambda: script_workers(node.process.pid))
        os.kill(old, signal.SIGKILL)
        new = wait_for(lambda: [p for p in script_workers(node.process.pid) if p != old])
        self.assertEqual(len(new), 1)
        # The replacement, started by the validation thread, dies with the node too.
        node.rpc("generatetoaddress", 1, MINER_ADDRESS)
        self.assertEqual(script_workers(node.process.pid), new)
        os.kill(node.process.pid, signal.SIGKILL)
        node.process.wait()
        self.assertTrue(wait_gone(new[0]))
