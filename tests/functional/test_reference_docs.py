"""The generated references against the real thing: doc/rest-openapi.json against a node's
REST routes, and doc/rpc-reference.md's generator with an installed third-party plugin."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from typing import Dict, List, Tuple

from twisted.trial.unittest import TestCase

from coin.rest.openapi import DOC_PATH
from coin.rest.resource import ENDPOINTS, endpoint
from tests.functional.test_plugin import SAMPLE, installed_plugins
from tests.nodeharness import ROOT, shared_node


def _fill(template: str, values: Dict[str, str]) -> str:
    for name, value in values.items():
        template = template.replace("{%s}" % name, value)
    return template


class OpenAPIAgainstNodeTests(TestCase):
    """Every described route answers; every route the resource serves is described."""

    def setUp(self) -> None:
        self.node = shared_node()
        with open(os.path.join(ROOT, DOC_PATH)) as f:
            self.doc = json.load(f)

    def _values(self) -> Dict[str, str]:
        block = self.node.rpc("getblockhash", 1)
        coinbase = self.node.rpc("getblock", block)["tx"][0]
        return {"hash": block, "txid": coinbase, "count": "2", "height": "1",
                "outpoints": "%s-0" % coinbase}

    def _requests(self) -> List[Tuple[str, str, str, bytes]]:
        """(template, method, concrete path, body) for every operation and format."""
        values = self._values()
        posted = (bytes.fromhex(values["txid"])[::-1] + struct.pack("<I", 0))
        requests = []
        for template, item in self.doc["paths"].items():
            for method, operation in item.items():
                formats = [p["schema"]["enum"] for p in operation["parameters"]
                           if p["name"] == "format"]
                for fmt in formats[0] if formats else [None]:
                    path = _fill(template, dict(values, format=fmt or ""))
                    body = b""
                    if method == "post":
                        raw = b"\x01" + posted
                        body = raw if fmt == "bin" else raw.hex().encode()
                    requests.append((template, method, path, body))
        return requests

    def test_served_description_is_the_committed_one(self) -> None:
        status, headers, body = self.node.post(b"", path="/rest/openapi.json", method="GET",
                                               auth=False)
        self.assertEqual((status, headers["content-type"]), (200, "application/json"))
        with open(os.path.join(ROOT, DOC_PATH), "rb") as f:
            self.assertEqual(body, f.read())

    def test_every_described_route_answers(self) -> None:
        for template, method, path, body in self._requests():
            status, headers, reply = self.node.post(body, path=path, method=method.upper(),
                                                    auth=False)
            self.assertEqual(status, 200, "%s %s: %r" % (method, path, reply[:200]))
            documented = self.doc["paths"][template][method]["responses"]["200"]["content"]
            self.assertIn(headers["content-type"], documented, path)

    def test_every_served_route_is_described(self) -> None:
        described = set()
        for _, _, path, _ in self._requests():
            found = endpoint(path[len("/rest/"):])
            self.assertIsNotNone(found, path)
            described.add(found[0])
        self.assertEqual(described, set(ENDPOINTS))

    def test_documented_errors_answer_with_their_status(self) -> None:
        cases = {"/rest/block/%s.json" % ("zz" * 32): 400,
                 "/rest/block/%s.json" % ("00" * 32): 404,
                 "/rest/headers/0/%s.json" % ("00" * 32): 400,
                 "/rest/blockhashbyheight/999999.json": 404,
                 "/rest/chaininfo.hex": 404, "/rest/openapi.bin": 404}
        for path, expected in cases.items():
            status, headers, _ = self.node.post(b"", path=path, method="GET", auth=False)
            self.assertEqual(status, expected, path)
            self.assertEqual(headers["content-type"], "text/plain", path)


class RPCReferencePluginTests(TestCase):

    def test_plugin_methods_appear_when_named(self) -> None:
        target = installed_plugins()
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, target]))
        output = os.path.abspath(self.mktemp())
        result = subprocess.run(
            [sys.executable, "-m", "coin.rpc.docgen", "--plugin", SAMPLE, "--output", output],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(output) as f:
            text = f.read()
        self.assertIn("\n## Hello\n\n### blocktxcount\n", text)
        self.assertIn("\n### hellowallet\n", text)
        self.assertIn("`python -m coin.rpc.docgen --plugin %s`" % SAMPLE, text)
        with open(os.path.join(ROOT, "doc", "rpc-reference.md")) as f:
            self.assertNotIn("### hello", f.read())
