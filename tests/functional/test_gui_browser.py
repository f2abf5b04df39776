"""coin-qt in a real browser (headless Chromium driven by Playwright), as a user works with it.

One ``coin-qt -regtest -server -nobrowser`` serves the tests of this module (started on first
use, stopped at exit; a test that needs RPC off or a masternode.conf starts its own), and one
Chromium (tests/browserharness.py) in which each test opens contexts of its own.
Skipped, with the reason, when playwright or Chromium is missing. With COIN_GUI_SCREENSHOTS=1
the tests save the screenshots of doc/gui.md to doc/gui/*.png.
"""

from __future__ import annotations

from decimal import Decimal
import http.client
import os
import re
import tempfile
import time
from typing import Any, Tuple

from twisted.trial.unittest import TestCase

from tests.browserharness import js_errors, playwright_api, screenshot, shared_browser
from tests.govhelpers import proposal_hex
from tests.guiharness import GUIProcess
from tests.nodeharness import PASSWORD, USER, NodeClient, NodeProcess, free_port, shared_fixture

PAGES = ["overview", "send", "receive", "transactions", "masternodes", "governance", "peers", "console",
         "settings"]
class RPCClient(NodeClient):
    """JSON-RPC and coin-cli to a coin-qt's -rpcport (user and password of nodeharness)."""

    def __init__(self, datadir: str, rpcport: int) -> None:
        self.datadir = datadir
        self._rpcport = rpcport
        self.credentials = (USER, PASSWORD)

    @property
    def rpcport(self) -> int:
        return self._rpcport


def start_gui(datadir: str, server: bool) -> Tuple[GUIProcess, RPCClient]:
    """coin-qt on a known -rpcport, its JSON-RPC server on (-server) or left off."""
    port = free_port()
    args = ["-rpcport=%d" % port, "-rpcuser=%s" % USER, "-rpcpassword=%s" % PASSWORD]
    gui = GUIProcess.start(datadir, args + (["-server"] if server else []))
    return gui, RPCClient(gui.datadir, port)


#: The key field of the tests' masternode.conf line (never used: its collateral is missing first).
MASTERNODE_KEY = "93HaYBVUCYjEMeeH1Y4sBGLALQZE1Yc1K64xiqgX37tGBDQL8Xg"
def shared_gui() -> Tuple[GUIProcess, RPCClient]:
    """The module's coin-qt (with -server) and a JSON-RPC client of it; stopped at exit."""
    return shared_fixture(shared_gui, lambda: start_gui(tempfile.mkdtemp(prefix="coin-gui-"), server=True),
                          lambda shared: shared[0].stop())


def tab(page: Any, name: str) -> None:
    """Open a page by its tab, as a user clicks it."""
    page.click("#tab-" + name)
    page.wait_for_selector("#page-%s:not([hidden]):not([aria-busy])" % name)


def console(page: Any, command: str) -> str:
    """Run a console command; returns the text of its answer (result or error)."""
    tab(page, "console")
    before = page.locator(".console-log pre:not(.command)").count()
    page.fill("#console-input", command)
    page.press("#console-input", "Enter")
    answer = page.locator(".console-log pre:not(.command)").nth(before)
    answer.wait_for(timeout=60000)
    return answer.inner_text()


def wait_until(page: Any, expression: str, timeout: float = 20.0) -> None:
    """Until ``expression`` is true in the page (wait_for_function would eval: the CSP forbids it)."""
    deadline = time.monotonic() + timeout
    while not page.evaluate(expression):
        if time.monotonic() > deadline:
            raise AssertionError("still false after %ss: %s" % (timeout, expression))
        page.wait_for_timeout(100)


def wait_text(locator: Any, pattern: str, timeout: float = 30000) -> str:
    """Until the element's text matches ``pattern`` (a regular expression); returns it."""
    playwright_api().expect(locator).to_have_text(re.compile(pattern), timeout=timeout)
    return locator.inner_text()


def message(page: Any, name: str) -> Any:
    """The message region (role=alert) of a page."""
    return page.locator("#page-%s .message" % name).first


def settings_form(page: Any, field: str, value: str) -> None:
    tab(page, "settings")
    page.fill(field, value)
    page.press(field, "Enter")


class BrowserTestCase(TestCase):
    """Pages of coin-qt in the process's Chromium, each in a context of the test's own; each
    fails its test on a script error or CSP violation."""

    def setUp(self) -> None:
        self.browser = shared_browser()  # SkipTest without playwright or Chromium

    def open(self, gui: GUIProcess, **options: Any) -> Any:
        """A page of ``gui`` in a fresh browser context (its own session), closed after the test."""
        page = self.browser.page(gui.url, **options)
        self.addCleanup(page.context.close)
        self.addCleanup(self.assertNoScriptErrors, page)
        return page

    def assertNoScriptErrors(self, page: Any) -> None:
        """No uncaught exception and no console error (a CSP violation is one)."""
        self.assertEqual(page.coin_errors, {"pageerror": [], "console": []})


class BrowserFlowTests(BrowserTestCase):
    """The issue's scenario: mine, second wallet, send, live balance, transactions, CSV, encrypt."""

    def test_send_to_second_wallet_live_balance_csv_encrypt(self) -> None:
        gui = shared_gui()[0]
        page = self.open(gui)
        context = page.context
        # The token is gone from the address bar after the first load (303 to /).
        self.assertNotIn("token", page.url)

        # Mine from the console: 101 blocks make the first 50 COIN spendable.
        hashes = console(page, "generate 101")
        self.assertEqual(len(re.findall(r'"[0-9a-f]{64}"', hashes)), 101)
        screenshot(page, "console")

        # A second wallet from Settings, selected at once; its address from Receive.
        settings_form(page, "#set-create", "w2")
        wait_text(message(page, "settings"), "Created and selected w2")
        self.assertEqual(page.input_value("#wallet-select"), "w2")
        tab(page, "receive")
        page.fill("#rc-label", "from the default wallet")
        page.fill("#rc-amount", "12.5")
        page.click("#page-receive button[type=submit]")
        address = page.locator("#rc-address").inner_text()
        self.assertRegex(address, r"^[1-9A-HJ-NP-Za-km-z]{26,35}$")
        wait_until(page, "document.querySelector('img.qr').naturalWidth > 0")
        wait_text(page.locator("#page-receive table"), "from the default wallet")
        screenshot(page, "receive")

        # A second tab of the same session shows w2's Overview; it must update by itself.
        watcher = context.new_page()
        watcher.coin_errors = js_errors(watcher)
        self.addCleanup(self.assertNoScriptErrors, watcher)
        watcher.goto(gui.url.split("?")[0] + "#overview")
        watcher.wait_for_selector("#status-live[data-state=open]")
        watcher.select_option("#wallet-select", "w2")
        wait_text(watcher.locator("#ov-total"), r"^0\.00000000 COIN$")

        # Send 12.5 COIN from the default wallet to w2's address, and 1 COIN less the fee to one
        # of its own.
        page.select_option("#wallet-select", "")
        own = console(page, "getnewaddress")
        tab(page, "send")
        page.fill("#send-address-1", address[:-1] + ("1" if address[-1] != "1" else "2"))
        wait_text(page.locator("#send-hint-1"), "Not a valid address")
        page.fill("#send-address-1", address)
        wait_text(page.locator("#send-hint-1"), "^Valid address$")
        page.fill("#send-label-1", "w2 savings")
        page.fill("#send-amount-1", "12.5")
        page.click("text=Add recipient")
        self.assertEqual(page.evaluate("document.activeElement.id"), "send-address-2")
        page.fill("#send-address-2", own)
        page.fill("#send-amount-2", "1")
        page.check("#send-subtract-2")
        page.click("#send-button")
        dialog = page.locator("dialog[open]")
        dialog.wait_for()
        fee = dialog.locator(".fee").inner_text()
        self.assertRegex(fee, r"^0\.0000\d{4} COIN$")
        lines = dialog.locator("li").all_inner_texts()
        self.assertIn("12.50000000 COIN to w2 savings (%s)" % address, lines)
        self.assertIn("%s COIN to %s" % (Decimal(1) - Decimal(fee.split()[0]), own), lines)
        self.assertIn("Total: 13.50000000 COIN", dialog.inner_text())
        screenshot(page, "send-confirm")
        dialog.locator("button[type=submit]").click()
        sent = wait_text(message(page, "send"), r"^Sent: transaction [0-9a-f]{64}$")
        txid = sent.split()[-1]
        # The label given is in the address book now: typing the address again brings it back.
        tab(page, "overview")
        tab(page, "send")
        page.fill("#send-address-3", address)  # the form's third row: the send cleared rows 1 and 2
        wait_text(page.locator("#send-hint-3"), "^Valid address$")
        playwright_api().expect(page.locator("#send-label-3")).to_have_value("w2 savings")
        page.click("text=Clear all")

        # Live: the watcher's Overview shows it pending, then available once a block is mined.
        wait_text(watcher.locator("#ov-pending"), r"^12\.50000000 COIN$")
        console(page, "generate 1")
        wait_text(watcher.locator("#ov-available"), r"^12\.50000000 COIN$")
        wait_text(watcher.locator("#ov-pending"), r"^0\.00000000 COIN$")
        screenshot(watcher, "overview")

        # Transactions of w2: the payment, its filters and details, and the CSV export.
        tab(watcher, "transactions")
        rows = watcher.locator("#page-transactions tbody tr")
        wait_text(rows.first, r"Received.*12\.50000000 COIN")
        watcher.select_option("#tx-type", "send")
        wait_text(rows.first, "No transaction matches the filter")
        watcher.select_option("#tx-type", "all")
        watcher.fill("#tx-search", txid[:12])
        self.assertEqual(rows.count(), 1)
        screenshot(watcher, "transactions")
        rows.first.locator("button").click()
        self.assertIn(txid, watcher.locator("dialog[open]").inner_text())
        watcher.keyboard.press("Escape")
        watcher.locator("dialog").wait_for(state="detached")
        with watcher.expect_download() as download:
            watcher.click("#tx-csv")
        with open(download.value.path(), encoding="utf-8") as f:
            csv = f.read()
        self.assertTrue(csv.startswith('"Confirmed","Date","Type","Label","Address","Amount","ID"')
                        or csv.startswith("Confirmed,Date,Type,Label,Address,Amount,ID"), csv[:200])
        self.assertIn(txid, csv)
        self.assertIn(address, csv)

        # Encrypt w2, unlock and lock it from Settings; the footer follows the status events.
        tab(watcher, "settings")
        watcher.click("text=Encrypt wallet…")
        watcher.fill("dialog[open] input[name=passphrase]", "correct horse")
        watcher.fill("dialog[open] input[name=repeat]", "correct horse")
        watcher.press("dialog[open] input[name=repeat]", "Enter")
        wait_text(watcher.locator("#wallet-lock-state"), "w2: encrypted, locked", timeout=60000)
        wait_text(watcher.locator("#status-lock"), "^Wallet locked$")
        watcher.click("text=Unlock…")
        watcher.fill("dialog[open] input[name=passphrase]", "wrong")
        watcher.press("dialog[open] input[name=passphrase]", "Enter")
        wait_text(message(watcher, "settings"), "The wallet passphrase entered was incorrect")
        watcher.click("text=Unlock…")
        watcher.fill("dialog[open] input[name=passphrase]", "correct horse")
        watcher.press("dialog[open] input[name=passphrase]", "Enter")
        wait_text(watcher.locator("#wallet-lock-state"), "w2: encrypted, unlocked until")
        wait_text(watcher.locator("#status-lock"), "^Wallet unlocked$")
        screenshot(watcher, "settings")
        watcher.click("#page-settings button:text-is('Lock')")
        wait_text(watcher.locator("#wallet-lock-state"), "w2: encrypted, locked")

        # Sending from the locked wallet asks for the passphrase and locks it again after.
        tab(page, "receive")  # the default wallet's address as the recipient
        page.click("#page-receive button[type=submit]")
        wait_until(page, "document.querySelector('#rc-address').textContent !== %r" % address)
        home = page.locator("#rc-address").inner_text()
        tab(watcher, "send")
        watcher.fill("#send-address-1", home)
        watcher.fill("#send-amount-1", "20")
        watcher.click("#send-button")
        wait_text(message(watcher, "send"), "Insufficient funds")
        watcher.fill("#send-amount-1", "2")
        watcher.check("#send-subtract-1")
        watcher.check("#send-fee-custom")
        watcher.fill("#send-fee-rate", "0.001")
        watcher.click("#send-button")
        fee = Decimal(watcher.locator("dialog[open] .fee").inner_text().split()[0])
        self.assertGreaterEqual(fee, Decimal("0.0001"))  # 0.001 per kB, 100 bytes at least
        self.assertIn("%s COIN to %s" % (2 - fee, home), watcher.locator("dialog[open] li").inner_text())
        watcher.locator("dialog[open] button[type=submit]").click()  # confirm
        unlock = watcher.locator("dialog[open]")
        wait_text(unlock.locator("h2"), "^Unlock wallet$")
        watcher.fill("dialog[open] input[name=passphrase]", "correct horse")
        watcher.press("dialog[open] input[name=passphrase]", "Enter")
        wait_text(message(watcher, "send"), r"^Sent: transaction [0-9a-f]{64}$")
        info = shared_gui()[1].rpc("getwalletinfo", path="/wallet/w2")
        self.assertEqual(info["unlocked_until"], 0)

        # Back up, unload and load w2 from Settings.
        backup = os.path.abspath(self.mktemp())
        settings_form(watcher, "#set-backup-path", backup)
        wait_text(message(watcher, "settings"), "^Wallet backed up to ")
        self.assertTrue(os.path.isfile(backup))
        watcher.click("text=Unload w2")
        wait_text(message(watcher, "settings"), "^Unloaded w2$")
        self.assertEqual(watcher.locator("#wallet-select option").all_inner_texts(), ["(default wallet)"])
        settings_form(watcher, "#set-load", "w2")
        wait_text(message(watcher, "settings"), "^Loaded and selected w2$")
        self.assertEqual(watcher.input_value("#wallet-select"), "w2")


class BrowserPageTests(BrowserTestCase):
    """Keyboard, layout, errors in words, exact amounts, and the RPC server switch."""

    def test_masternode_start_and_governance_vote_buttons(self) -> None:
        # A masternode.conf line whose collateral is no masternode, and a proposal with its fee.
        datadir = os.path.abspath(self.mktemp())
        os.makedirs(os.path.join(datadir, "regtest"))
        with open(os.path.join(datadir, "regtest", "masternode.conf"), "w") as f:
            f.write("mn1 127.0.0.1:19999 %s %s 0\n" % (MASTERNODE_KEY, "ab" * 32))
        gui, _ = start_gui(datadir, server=False)
        self.addCleanup(gui.stop)
        gui.call("generate", 101)
        data = proposal_hex(gui.call("getnewaddress"), name="gui-test", payment_amount=12.5)
        fee_txid = gui.call("gobject", "prepare", "0", "1", "1700000000", data)
        gui.call("generate", 1)
        gui.call("gobject", "submit", "0", "1", "1700000000", data, fee_txid)
        page = self.open(gui)

        tab(page, "masternodes")
        mine = page.locator("#page-masternodes table").first
        wait_text(mine, r"mn1127\.0\.0\.1:19999%s:0MISSING" % ("ab" * 32))
        page.click("text=Start mn1")
        wait_text(message(page, "masternodes"), "^mn1: failed, ")
        screenshot(page, "masternodes")

        tab(page, "governance")
        row = page.locator("#page-governance tbody tr").first
        wait_text(row, r"^gui-test12\.50000000 COIN.*0 / 0 / 0no")
        row.locator("text=Vote yes").click()
        wait_text(message(page, "governance"),
                  r"^Voted successfully 0 time\(s\) and failed 1 time\(s\)\. mn1: Can't find masternode")
        screenshot(page, "governance")

    def test_tabs_keyboard_and_dialog_keys(self) -> None:
        gui = shared_gui()[0]
        page = self.open(gui)
        page.focus("#tab-overview")
        page.keyboard.press("ArrowRight")
        self.assertEqual(page.evaluate("document.activeElement.id"), "tab-send")
        self.assertEqual(page.get_attribute("#tab-send", "aria-selected"), "true")
        self.assertFalse(page.is_hidden("#page-send"))
        self.assertTrue(page.is_hidden("#page-overview"))
        page.keyboard.press("End")
        self.assertEqual(page.evaluate("document.activeElement.id"), "tab-settings")
        page.keyboard.press("ArrowRight")  # wraps around
        self.assertEqual(page.evaluate("document.activeElement.id"), "tab-overview")
        page.keyboard.press("ArrowLeft")
        self.assertEqual(page.evaluate("document.activeElement.id"), "tab-settings")
        # One tab stop for the tab list (roving tabindex): Tab goes on into the page.
        self.assertEqual(page.eval_on_selector_all('[role=tab][tabindex="0"]', "els => els.map(e => e.id)"),
                         ["tab-settings"])
        page.keyboard.press("Tab")
        self.assertEqual(page.evaluate("document.activeElement.id"), "page-settings")
        # The console: Tab completes a method name, Up brings the last command back.
        console(page, "getblockcount")
        page.fill("#console-input", "getblockco")
        page.press("#console-input", "Tab")
        playwright_api().expect(page.locator("#console-input")).to_have_value("getblockcount ")
        page.fill("#console-input", "getblock")
        page.press("#console-input", "Tab")  # several: the common prefix stays, the names are listed
        wait_text(page.locator("#console-hint"), "getblockchaininfo")
        page.press("#console-input", "ArrowUp")
        self.assertEqual(page.input_value("#console-input"), "getblockcount")
        tab(page, "settings")
        # A dialog: Enter submits (the check keeps it open), Escape cancels; focus comes back.
        page.wait_for_selector("#wallet-lock-state")
        page.click("text=Encrypt wallet…")
        page.fill("dialog[open] input[name=passphrase]", "one")
        page.fill("dialog[open] input[name=repeat]", "two")
        page.press("dialog[open] input[name=repeat]", "Enter")
        self.assertEqual(page.locator("dialog[open] [role=alert]").inner_text(), "The two passphrases differ")
        page.keyboard.press("Escape")
        page.locator("dialog").wait_for(state="detached")
        self.assertTrue(page.locator("#wallet-lock-state").inner_text().endswith(": not encrypted"))

    def test_no_horizontal_overflow_at_1024x768_and_200_percent_zoom(self) -> None:
        gui, rpc = shared_gui()
        # A peer, so that the Peers page has a row to lay out.
        peer = NodeProcess.start(self.mktemp(), ["-connect=0", "-listen=1"])
        self.addCleanup(peer.stop)
        rpc.rpc("addnode", "127.0.0.1:%d" % peer.p2p_port, "onetry")
        # 200% zoom of a 1024x768 window: a 512x384 CSS pixel viewport at 2 device pixels each.
        for viewport, scale in (({"width": 1024, "height": 768}, 1), ({"width": 512, "height": 384}, 2)):
            page = self.open(gui, viewport=viewport, device_scale_factor=scale)
            for name in PAGES:
                tab(page, name)
                overflow = page.evaluate(
                    "document.documentElement.scrollWidth - document.documentElement.clientWidth")
                self.assertEqual(overflow, 0, "%s overflows by %d px at %r" % (name, overflow, viewport))
                if scale == 1 and name == "peers":
                    screenshot(page, name)
            if scale == 2:
                tab(page, "send")
                screenshot(page, "zoom-200-send")

    def test_errors_in_words(self) -> None:
        gui = shared_gui()[0]
        page = self.open(gui)
        answer = console(page, "getblock 00")
        self.assertEqual(answer, "Block not found (code -5)")
        self.assertEqual(console(page, "nosuchmethod"), "Method not found (code -32601)")
        address = console(page, "getnewaddress")
        tab(page, "send")
        page.fill("#send-address-1", "x")
        page.fill("#send-amount-1", "1")
        wait_text(page.locator("#send-hint-1"), "^Not a valid address for this network$")
        page.click("#send-button")
        wait_text(message(page, "send"), "^Recipient 1: not a valid address$")
        page.fill("#send-address-1", address)
        wait_text(page.locator("#send-hint-1"), "^Valid address$")
        page.fill("#send-amount-1", "1.123456789")
        page.click("#send-button")
        wait_text(message(page, "send"), r"^Invalid amount: at most 8 decimal places in this unit$")

    def test_bump_fee_of_a_replaceable_send(self) -> None:
        gui, _ = start_gui(os.path.abspath(self.mktemp()), server=False)
        self.addCleanup(gui.stop)
        gui.call("generate", 101)
        page = self.open(gui)

        def send(replaceable: bool) -> str:
            tab(page, "send")
            # Row ids go on counting after a send (it clears the rows): take the first row.
            page.locator("#page-send [id^=send-address-]").first.fill(gui.call("getnewaddress"))
            page.locator("#page-send [id^=send-amount-]").first.fill("1")
            if replaceable:
                page.check("#send-rbf")
            page.click("#send-button")
            page.locator("dialog[open] button[type=submit]").click()
            return wait_text(message(page, "send"), r"^Sent: transaction [0-9a-f]{64}$").split()[-1]

        def details(txid: str) -> Any:
            tab(page, "transactions")
            page.fill("#tx-search", txid)
            page.locator("#page-transactions tbody tr").first.locator("button").click()
            dialog = page.locator("dialog[open]")
            wait_text(dialog.locator("dl"), txid)  # opened (after its gettransaction)
            return dialog

        # A send without the Replace-By-Fee request cannot be bumped: no button.
        final = send(replaceable=False)
        self.assertEqual(gui.call("gettransaction", final)["bip125-replaceable"], "no")
        self.assertEqual(details(final).locator("#tx-bump").count(), 0)
        page.keyboard.press("Escape")
        page.locator("dialog").wait_for(state="detached")

        txid = send(replaceable=True)
        self.assertEqual(gui.call("gettransaction", txid)["bip125-replaceable"], "yes")
        details(txid).locator("#tx-bump").click()
        confirm = page.locator("dialog[open]")
        wait_text(confirm.locator("h2"), "^Bump fee$")
        confirm.locator("button[type=submit]").click()
        done = wait_text(message(page, "transactions"),
                         r"^Fee bumped from 0\.\d{8} COIN to 0\.\d{8} COIN: replacement [0-9a-f]{64}$")
        replacement = done.split()[-1]
        self.assertEqual(gui.call("gettransaction", txid)["replaced_by_txid"], replacement)
        self.assertEqual(gui.call("gettransaction", replacement)["replaces_txid"], txid)
        pool = gui.call("getrawmempool")
        self.assertIn(replacement, pool)
        self.assertNotIn(txid, pool)
        old_fee, new_fee = (Decimal(part.split()[0]) for part in
                            re.findall(r"0\.\d{8} COIN", done))
        self.assertGreater(new_fee, old_fee)
        # The replaced transaction's details name its replacement and offer no second bump.
        dialog = details(txid)
        self.assertIn(replacement, dialog.inner_text())
        self.assertEqual(dialog.locator("#tx-bump").count(), 0)
        page.keyboard.press("Escape")

    def test_amounts_are_exact(self) -> None:
        gui = shared_gui()[0]
        page = self.open(gui)
        result = page.evaluate("""async () => {
            const a = await import("/static/js/amount.js");
            return {
                max: a.toRpc(a.toBase(21000000.12345678)),
                tenth: a.toRpc(a.toBase(0.1) + a.toBase(0.2)),
                satoshi: a.toRpc(a.toBase(1e-8)),
                milli: a.formatAmount(a.parseAmount("1.5", "mCOIN"), "COIN"),
                micro: a.formatAmount(123456789n, "µCOIN"),
                negative: a.formatAmount(a.toBase(-0.3), "mCOIN"),
                tooFine: (() => { try { a.parseAmount("0.001", "µCOIN"); return "accepted"; }
                                  catch (e) { return e.message; } })(),
            };
        }""")
        self.assertEqual(result, {
            "max": "21000000.12345678", "tenth": "0.30000000", "satoshi": "0.00000001",
            "milli": "0.00150000 COIN", "micro": "1234567.89 µCOIN", "negative": "-300.00000 mCOIN",
            "tooFine": "Invalid amount: at most 2 decimal places in this unit"})

    def test_unit_selector_rewrites_amounts(self) -> None:
        gui = shared_gui()[0]
        page = self.open(gui)
        tab(page, "send")
        page.fill("#send-amount-1", "1.5")
        page.select_option("#unit-select", "mCOIN")
        self.assertEqual(page.input_value("#send-amount-1"), "1500.00000")
        page.select_option("#unit-select", "COIN")
        self.assertEqual(page.input_value("#send-amount-1"), "1.50000000")

    def test_rpc_port_open_with_server(self) -> None:
        gui, rpc = shared_gui()
        self.assertIsInstance(rpc.rpc("getblockcount"), int)
        self.assertEqual(rpc.cli("getblockcount").returncode, 0)
        page = self.open(gui)
        session = page.evaluate("fetch('/api/session').then(r => r.json())")
        self.assertEqual((session["server"], session["rpcport"]), (True, rpc.rpcport))
        tab(page, "settings")
        wait_text(page.locator("#set-rpc"), "^JSON-RPC server: on, port %d$" % rpc.rpcport)

    def test_rpc_port_closed_without_server(self) -> None:
        gui, rpc = start_gui(self.mktemp(), server=False)
        self.addCleanup(gui.stop)
        conn = http.client.HTTPConnection("127.0.0.1", rpc.rpcport, timeout=10)
        self.addCleanup(conn.close)
        self.assertRaises(ConnectionRefusedError, conn.request, "POST", "/", b"{}")
        page = self.open(gui)
        session = page.evaluate("fetch('/api/session').then(r => r.json())")
        self.assertEqual((session["server"], session["rpcport"]), (False, None))
        tab(page, "settings")
        wait_text(page.locator("#set-rpc"), "^JSON-RPC server: off")
        # The GUI itself still reaches every RPC method in-process.
        self.assertEqual(console(page, "getblockcount"), "0")
