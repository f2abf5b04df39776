"""The harness's free ports: parallel test processes (``trial -j``) never share one."""

from __future__ import annotations

import random
import socket
import subprocess
import sys

from twisted.trial.unittest import SynchronousTestCase

from tests import nodeharness
from tests.nodeharness import ROOT, _env, free_port

#: Claims one port from the range given in argv and holds it until stdin closes.
CLAIMER = """
import sys
from tests import nodeharness
nodeharness.TEST_PORTS = range(int(sys.argv[1]), int(sys.argv[2]))
print(nodeharness.free_port(), flush=True)
sys.stdin.read()
"""


class FreePortTests(SynchronousTestCase):
    def test_another_process_never_gets_a_claimed_port(self) -> None:
        # Two ports outside the harness's own range, so no concurrent test run holds them.
        low = random.randrange(21000, 21900, 2)
        self.patch(nodeharness, "TEST_PORTS", range(low, low + 2))
        self.patch(nodeharness, "_claimed", set())
        other = subprocess.Popen([sys.executable, "-c", CLAIMER, str(low), str(low + 2)],
                                 cwd=ROOT, env=_env(), stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True)
        self.addCleanup(other.wait)
        self.addCleanup(other.stdin.close)
        theirs = int(other.stdout.readline())
        mine = free_port()
        self.assertEqual({theirs, mine}, {low, low + 1})
        # Both ports are now claimed: one by each process.
        self.assertRaises(RuntimeError, free_port)

    def test_a_port_in_use_is_skipped(self) -> None:
        low = random.randrange(21000, 21900, 2)
        self.patch(nodeharness, "TEST_PORTS", range(low, low + 2))
        self.patch(nodeharness, "_claimed", set())
        with socket.socket() as busy:
            busy.bind(("127.0.0.1", low))
            busy.listen()
            self.assertEqual(free_port(), low + 1)
            self.assertRaises(RuntimeError, free_port)
