"""A headless Chromium driven by Playwright, for the browser tests of coin-qt.

    browser = Browser.launch()          # raises SkipTest without playwright or Chromium
    page = browser.page(gui.url)        # a fresh context (its own session), the app loaded
    ...
    browser.close()

Playwright's sync API runs its own event loop in the calling thread: these helpers are for
process-based tests (tests/guiharness.py starts coin-qt), whose bodies run on trial's main
thread with no asyncio loop running. :func:`shared_browser` is one Chromium per test process
(launching one costs seconds): between sync calls Playwright leaves its loop marked running in
that thread, which nothing else in this code base minds (no asyncio: trial's reactor is epoll
and in-process nodes run their tests on threads of their own). Each test still gets fresh
contexts (cookies, storage) of its own, closed after it.
Playwright's own browser builds are never downloaded:
Debian's Chromium is launched (``COIN_CHROMIUM`` names another).
"""

from __future__ import annotations

import os
import shutil
from typing import Any, Dict

from twisted.trial.unittest import SkipTest

from tests.nodeharness import ROOT, shared_fixture

CHROMIUM = os.environ.get("COIN_CHROMIUM", "/usr/bin/chromium")
#: What Chromium needs to run headless here: no sandbox (root), and no traffic off loopback.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
#: Where the tests save screenshots for doc/gui.md when COIN_GUI_SCREENSHOTS=1.
SCREENSHOTS = os.path.join(ROOT, "doc", "gui")


def playwright_api() -> Any:
    """playwright.sync_api, or SkipTest saying why the browser tests cannot run."""
    try:
        from playwright import sync_api
    except ImportError:
        raise SkipTest("browser tests: playwright is not installed (pip install playwright)")
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)) and not shutil.which(CHROMIUM):
        raise SkipTest("browser tests: no Chromium at %s (apt-get install chromium)" % CHROMIUM)
    return sync_api


def js_errors(page: Any) -> Dict[str, list]:
    """Collect the page's uncaught errors and console errors (CSP violations show there)."""
    seen: Dict[str, list] = {"pageerror": [], "console": []}
    page.on("pageerror", lambda error: seen["pageerror"].append(str(error)))
    page.on("console", lambda msg: seen["console"].append("%s (%s)" % (msg.text, msg.location.get("url")))
            if msg.type == "error" else None)
    return seen


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
        context.set_default_timeout(30000)
        return context

    def page(self, url: str, context: Any = None, **options: Any) -> Any:
        """A page of ``context`` (a new one by default) that opened ``url`` and whose WebSocket
        is connected; its script errors collect in ``page.coin_errors``."""
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


def shared_browser() -> Browser:
    """One Chromium per test process, launched on first use and closed at exit (SkipTest
    without playwright or Chromium)."""
    return shared_fixture(shared_browser, Browser.launch, Browser.close)


def screenshot(page: Any, name: str) -> None:
    """Save ``doc/gui/<name>.png`` when COIN_GUI_SCREENSHOTS=1 (the normal run leaves the docs)."""
    if os.environ.get("COIN_GUI_SCREENSHOTS") == "1":
        os.makedirs(SCREENSHOTS, exist_ok=True)
        page.screenshot(path=os.path.join(SCREENSHOTS, name + ".png"))
