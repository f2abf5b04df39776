"""doc/rpc-reference.md is what the registry generates (python -m coin.rpc.docgen)."""

from __future__ import annotations

import os

from twisted.trial.unittest import SynchronousTestCase

from coin.rpc.docgen import COMMAND, DOC_PATH, main, render
from coin.rpc.registry import MethodTable, load_plugins, rpc_method

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))


class ReferenceTests(SynchronousTestCase):

    def test_committed_reference_is_current(self) -> None:
        with open(os.path.join(ROOT, DOC_PATH), encoding="utf-8") as f:
            committed = f.read()
        if committed != render(load_plugins()):
            self.fail("%s is stale: regenerate it with `%s` (from the repository root)"
                      % (DOC_PATH, COMMAND))

    def test_every_method_with_its_whole_help(self) -> None:
        methods = load_plugins()
        text = render(methods)
        for method in methods:
            self.assertIn("\n### %s\n\n```text\n%s\n```\n"
                          % (method.name, method.help_text.rstrip("\n")), text)

    def test_grouped_like_help(self) -> None:
        """Categories in help's order and titles, then the methods help does not list."""
        def method(name: str, category: str):
            return rpc_method(name, category=category, help="Does %s." % name)(lambda ctx: 0)

        table = MethodTable([method("zeta", "alpha"), method("beta", "zulu"),
                             method("alpha", "alpha"), method("secret", "hidden")])
        text = render(table)
        headings = [line for line in text.splitlines() if line.startswith("#")]
        self.assertEqual(headings, ["# RPC reference", "## Alpha", "### alpha", "### zeta",
                                    "## Zulu", "### beta", "## Hidden (not listed by `help`)",
                                    "### secret"])
        self.assertIn("== Alpha ==\nalpha\nzeta\n\n== Zulu ==\nbeta", table.help())

    def test_check_mode(self) -> None:
        path = self.mktemp()
        self.assertEqual(main(["--check", "--output", path]), 1)
        self.assertEqual(main(["--output", path]), 0)
        self.assertEqual(main(["--check", "--output", path]), 0)
