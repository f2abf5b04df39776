"""Real ``coin-qt`` processes and a headless Chromium for the browser tests.

    gui = GuiProcess.start(self.mktemp(), ["-server"])   # regtest, -nobrowser, user u / password p
    gui.url                                              # the printed http://127.0.0.1:PORT/?token=..
    browser = Browser.launch()                           # raises SkipTest without playwright/chromium
    page = browser.page(gui.url)
    ...
    browser.close(); gui.stop()

Playwright's sync API runs its own event loop in the calling thread: these helpers are for
process-based tests, whose bodies run on trial's main thread with no asyncio loop running.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from typing import Any, Dict, Optional, Sequence

from twisted.trial.unittest import SkipTest

from tests.nodeharness import ROOT, USER, PASSWORD, NodeProcess, _default_sigint, _env, free_port

CHROMIUM = os.environ.get("COIN_CHROMIUM", "/usr/bin/chromium")
#: What Chromium needs to run headless here: no sandbox (root), and no traffic off loopback.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
_URL = re.compile(r"coin-qt: open (http://127\.0\.0\.1:\d+/\?token=\S+)")
#: Where the tests save screenshots for doc/gui.md when COIN_GUI_SCREENSHOTS=1.
SCREENSHOTS = os.path.join(ROOT, "doc", "gui")


class GuiProcess(NodeProcess):
    """A ``coin-qt -regtest -nobrowser`` child (``python -m coin.gui``); its stdout goes to a file."""

    url: str = ""

    @classmethod
    def start(cls, datadir: str, extra_args: Sequence[str] = (),  # type: ignore[override]
              credentials: Optional[tuple] = (USER, PASSWORD), wait: bool = True) -> "GuiProcess":
        args = ["-nobrowser", "-guiport=%d" % free_port()] + list(extra_args)
        return super().start(datadir, args, credentials=credentials, wait=wait)  # type: ignore[return-value]

    def launch(self) -> None:
        self._stderr = open(os.path.join(self.datadir, "stderr.txt"), "w")
        self._stdout = open(os.path.join(self.datadir, "stdout.txt"), "w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "coin.gui"] + self.args, cwd=ROOT, env=_env(),
            stdin=subprocess.DEVNULL, stdout=self._stdout, stderr=self._stderr,
            preexec_fn=_default_sigint)

    def stdout_text(self) -> str:
        with open(os.path.join(self.datadir, "stdout.txt")) as f:
            return f.read()

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Until coin-qt printed its URL (the GUI server listens then)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError("coin-qt exited with %s: %s"
                                   % (self.process.returncode, self.stderr_text()))
            found = _URL.search(self.stdout_text())
            if found:
                self.url = found.group(1)
                return
            time.sleep(0.1)
        raise RuntimeError("coin-qt printed no URL: %s %s" % (self.stdout_text(), self.stderr_text()))

    def stop(self, timeout: float = 60.0) -> int:
        """SIGTERM (RPC may be off), then wait for the exit."""
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else 0
        self.process.send_signal(signal.SIGTERM)
        return self.wait(timeout)


def playwright_api() -> Any:
    """playwright.sync_api, or SkipTest saying why the browser tests cannot run."""
    try:
        from playwright import sync_api
    except ImportError:
        raise SkipTest("browser tests: playwright is not installed (pip install playwright)")
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)) and not shutil.which(CHROMIUM):
        raise SkipTest("browser tests: no Chromium at %s (apt-get install chromium)" % CHROMIUM)
    return sync_api


class Browser:
    """One headless Chromium; ``page()`` opens a page in a context (cookies) of its own."""

    def __init__(self, playwright: Any, browser: Any) -> None:
        self._playwright = playwright
        self.browser = browser

    @classmethod
    def launch(cls) -> "Browser":
        api = playwright_api()
        playwright = api.sync_playwright().start()
        try:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        except Exception:
            playwright.stop()
            raise
        return cls(playwright, browser)

    def context(self, **options: Any) -> Any:
        options.setdefault("viewport", {"width": 1024, "height": 768})
        context = self.browser.new_context(accept_downloads=True, **options)
        context.set_default_timeout(20000)
        return context

    def page(self, url: str, context: Any = None, **options: Any) -> Any:
        """A page of ``context`` (a new one by default) that opened ``url`` and has loaded the app."""
        context = context or self.context(**options)
        page = context.new_page()
        page.coin_errors = js_errors(page)
        page.goto(url)
        page.wait_for_selector("#status-live[data-state=open]")
        return page

    def close(self) -> None:
        try:
            self.browser.close()
        finally:
            self._playwright.stop()


def screenshot(page: Any, name: str) -> None:
    """Save ``doc/gui/<name>.png`` when COIN_GUI_SCREENSHOTS=1 (the normal run leaves the docs)."""
    if os.environ.get("COIN_GUI_SCREENSHOTS") == "1":
        os.makedirs(SCREENSHOTS, exist_ok=True)
        page.screenshot(path=os.path.join(SCREENSHOTS, name + ".png"), full_page=False)


def js_errors(page: Any) -> Dict[str, list]:
    """Collect the page's uncaught errors and console errors (CSP violations show there)."""
    seen: Dict[str, list] = {"pageerror": [], "console": []}
    page.on("pageerror", lambda error: seen["pageerror"].append(str(error)))
    page.on("console", lambda msg: seen["console"].append("%s (%s)" % (msg.text, msg.location.get("url")))
            if msg.type == "error" else None)
    return seen
