"""Drive a headless Chromium over the DevTools protocol, standard library only.

Chromium is started with ``--remote-debugging-pipe``: it reads protocol
messages on fd 3 and writes them on fd 4, each a JSON object ended by a NUL
byte.  No websocket, no port, no third-party client.  Every wait is bounded;
a browser that does not answer fails the test instead of hanging it.

Typical use::

    with Chromium.launch(profile_dir) as browser:
        page = browser.open("file:///.../report.html")
        page.evaluate("document.querySelectorAll('svg').length")
        page.click("button.sort[data-sort=name]")   # real mouse events; page.hover(selector) too
        page.screenshot("shot.png")
        page.errors          # console errors, uncaught exceptions, CSP and load errors
        page.requests        # every URL the page asked for
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional

_TRAMPOLINE = (
    "import os, sys\n"
    "src_in, src_out = int(sys.argv[1]), int(sys.argv[2])\n"
    "os.dup2(src_in, 3)\n"
    "os.dup2(src_out, 4)\n"
    "os.close(src_in)\n"
    "os.close(src_out)\n"
    "os.execv(sys.argv[3], sys.argv[3:])\n"
)
CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--no-first-run",
    "--no-default-browser-check",
    "--mute-audio",
    "--hide-scrollbars",
    "--remote-debugging-pipe",
)


def find_chromium() -> Optional[str]:
    """Path of a Chromium to drive: $WAKELAB_CHROMIUM, else the first one on PATH."""
    explicit = os.environ.get("WAKELAB_CHROMIUM")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


class BrowserError(Exception):
    """The browser did not answer, answered with an error, or died."""


class Chromium:
    """One headless Chromium process and its DevTools pipe."""

    def __init__(self, proc: subprocess.Popen, to_browser: int, from_browser: int, timeout_s: float) -> None:
        self.proc = proc
        self._out = to_browser
        self._in = from_browser
        self._buffer = b""
        self._next_id = 0
        self.timeout_s = timeout_s
        self.events: List[Dict[str, Any]] = []

    @classmethod
    def launch(cls, profile_dir: str, executable: Optional[str] = None, timeout_s: float = 60.0) -> "Chromium":
        executable = executable or find_chromium()
        if not executable:
            raise BrowserError("no Chromium found")
        to_r, to_w = os.pipe()  # we write, the browser reads (its fd 3)
        from_r, from_w = os.pipe()  # the browser writes (its fd 4), we read
        # The browser's ends must be fds 3 and 4 in the browser.  A preexec_fn could move them,
        # but it runs after the parent's at-fork hooks, which may close fds; a tiny trampoline
        # process (this interpreter, no site) moves them instead and execs the browser.
        # Parked above 10 first, so that moving one cannot clobber the other.
        high_in = fcntl.fcntl(to_r, fcntl.F_DUPFD_CLOEXEC, 10)
        high_out = fcntl.fcntl(from_w, fcntl.F_DUPFD_CLOEXEC, 10)
        command = [executable, *FLAGS, "--user-data-dir=" + profile_dir, "about:blank"]
        try:
            proc = subprocess.Popen(
                [sys.executable, "-S", "-c", _TRAMPOLINE, str(high_in), str(high_out), *command],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                pass_fds=(high_in, high_out),
            )
        finally:
            for fd in (to_r, from_w, high_in, high_out):
                os.close(fd)
        return cls(proc, to_w, from_r, timeout_s)

    # -- protocol -------------------------------------------------------------------------

    def send(self, method: str, params: Optional[Dict[str, Any]] = None, session: Optional[str] = None) -> int:
        self._next_id += 1
        message: Dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        data = json.dumps(message).encode() + b"\0"
        while data:
            written = os.write(self._out, data)
            data = data[written:]
        return self._next_id

    def _read_message(self, deadline: float) -> Dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("Chromium did not answer within %.0f s" % self.timeout_s)
            ready, _, _ = select.select([self._in], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._in, 1 << 20)
            if not chunk:
                raise BrowserError("Chromium closed its DevTools pipe (exit status %s)" % self.proc.poll())
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)  # type: ignore[no-any-return]

    def call(self, method: str, params: Optional[Dict[str, Any]] = None, session: Optional[str] = None) -> Dict[str, Any]:
        """Send a command and return its result; events that arrive meanwhile are kept in ``events``."""
        wanted = self.send(method, params, session)
        deadline = time.monotonic() + self.timeout_s
        while True:
            message = self._read_message(deadline)
            if message.get("id") == wanted:
                if "error" in message:
                    raise BrowserError("%s failed: %s" % (method, message["error"]))
                return message.get("result", {})  # type: ignore[no-any-return]
            if "method" in message:
                self.events.append(message)

    def wait_for(self, method: str, session: Optional[str] = None) -> Dict[str, Any]:
        """The first event ``method`` (of ``session``) not yet consumed, waiting for it if need be."""
        deadline = time.monotonic() + self.timeout_s
        seen = 0
        while True:
            for event in self.events[seen:]:
                if event.get("method") == method and (session is None or event.get("sessionId") == session) and not event.get("_used"):
                    event["_used"] = True
                    return event
            seen = len(self.events)
            self.events.append(self._read_message(deadline))

    # -- pages ----------------------------------------------------------------------------

    def open(self, url: str, width: int = 1280, height: int = 2000, offline: bool = False) -> "Page":
        """A new tab showing ``url``, loaded (its load event fired), with console and network watched.

        ``offline``: the tab has no network at all (DevTools network emulation, and every
        http, https, ws and wss URL blocked), so a page that needs one fails visibly.
        """
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(domain + ".enable", session=session)
        if offline:
            self.call("Network.emulateNetworkConditions",
                      {"offline": True, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1}, session)
            self.call("Network.setBlockedURLs", {"urls": ["http://*", "https://*", "ws://*", "wss://*"]}, session)
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}, session)
        page = Page(self, session, width)
        navigated = self.call("Page.navigate", {"url": url}, session)
        if navigated.get("errorText"):
            raise BrowserError("cannot load %s: %s" % (url, navigated["errorText"]))
        self.wait_for("Page.loadEventFired", session)
        # Let late console messages (a failed image decode, a CSP report) arrive.
        page.evaluate("new Promise(r => requestAnimationFrame(() => setTimeout(r, 100)))", await_promise=True)
        return page

    def close(self) -> None:
        try:
            if self.proc.poll() is None:
                try:
                    self.send("Browser.close")
                except OSError:
                    pass
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()  # our own child, by its pid
                    self.proc.wait(timeout=10)
        finally:
            for fd in (self._out, self._in):
                try:
                    os.close(fd)
                except OSError:
                    pass

    def __enter__(self) -> "Chromium":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Page:
    """A loaded tab: evaluate JavaScript, take screenshots, read what went wrong."""

    def __init__(self, browser: Chromium, session: str, width: int) -> None:
        self.browser = browser
        self.session = session
        self.width = width

    def _events(self, method: str) -> List[Dict[str, Any]]:
        return [e["params"] for e in self.browser.events if e.get("method") == method and e.get("sessionId") == self.session]

    def evaluate(self, expression: str, await_promise: bool = False) -> Any:
        result = self.browser.call(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": await_promise}, self.session
        )
        if result.get("exceptionDetails"):
            raise BrowserError("evaluating %r raised: %s" % (expression, result["exceptionDetails"]))
        return result.get("result", {}).get("value")

    @property
    def errors(self) -> List[str]:
        """Console errors and asserts, uncaught exceptions, and browser log entries of level error."""
        found = []
        for p in self._events("Runtime.consoleAPICalled"):
            if p.get("type") in ("error", "assert"):
                found.append("console.%s: %s" % (p["type"], " ".join(str(a.get("value", a.get("description"))) for a in p.get("args", []))))
        for p in self._events("Runtime.exceptionThrown"):
            found.append("uncaught: %s" % p.get("exceptionDetails", {}).get("text"))
        for p in self._events("Log.entryAdded"):
            entry = p.get("entry", {})
            if entry.get("level") == "error":
                found.append("log (%s): %s %s" % (entry.get("source"), entry.get("text"), entry.get("url", "")))
        for p in self._events("Network.loadingFailed"):
            found.append("load failed: %s (%s)" % (p.get("errorText"), p.get("requestId")))
        return found

    @property
    def warnings(self) -> List[str]:
        found = [p.get("entry", {}).get("text", "") for p in self._events("Log.entryAdded") if p.get("entry", {}).get("level") == "warning"]
        found += ["console.warn: %s" % p.get("args") for p in self._events("Runtime.consoleAPICalled") if p.get("type") == "warning"]
        return found

    @property
    def requests(self) -> List[str]:
        """Every URL the page requested (the page itself included)."""
        return [p["request"]["url"] for p in self._events("Network.requestWillBeSent")]

    def wait_until(self, expression: str, timeout_s: float = 30.0) -> Any:
        """Poll ``expression`` until it is truthy and return it; :class:`BrowserError` after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise BrowserError("still false after %.0f s: %s" % (timeout_s, expression))
            time.sleep(0.1)

    def _center(self, selector: str) -> Dict[str, float]:
        box = self.evaluate(
            "(() => { const e = document.querySelector(%s); if (!e) return null; e.scrollIntoView({block: 'center'});"
            " const r = e.getBoundingClientRect(); return {x: r.left + r.width / 2, y: r.top + r.height / 2}; })()"
            % json.dumps(selector)
        )
        if not box:
            raise BrowserError("no element matches %s" % selector)
        return box  # type: ignore[no-any-return]

    def hover(self, selector: str) -> None:
        """Move the mouse onto the middle of the first element matching ``selector`` (real input events)."""
        box = self._center(selector)
        self.browser.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": box["x"], "y": box["y"]}, self.session)

    def click(self, selector: str) -> None:
        """Click the middle of the first element matching ``selector`` with the mouse (real input events)."""
        box = self._center(selector)
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            params = {"type": kind, "x": box["x"], "y": box["y"], "button": "left", "clickCount": 1}
            if kind == "mouseMoved":
                params = {"type": kind, "x": box["x"], "y": box["y"]}
            self.browser.call("Input.dispatchMouseEvent", params, self.session)

    def screenshot(self, path: str, full_page: bool = True, max_height: int = 16000) -> str:
        """Save a PNG of the page (its whole height, up to ``max_height`` px); returns ``path``."""
        params: Dict[str, Any] = {"format": "png"}
        if full_page:
            size = self.browser.call("Page.getLayoutMetrics", session=self.session)["cssContentSize"]
            height = min(int(size["height"]) + 1, max_height)
            params.update(captureBeyondViewport=True, clip={"x": 0, "y": 0, "width": self.width, "height": height, "scale": 1})
        data = self.browser.call("Page.captureScreenshot", params, self.session)["data"]
        with open(path, "wb") as fh:
            fh.write(base64.b64decode(data))
        return path
