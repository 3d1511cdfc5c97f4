"""A minimal headless-Chromium driver for the HTML report tests, standard library only.

Chromium's DevTools protocol over ``--remote-debugging-pipe`` (commands on fd 3, replies
and events on fd 4, NUL-terminated JSON): no websocket client, no Playwright, no port.
Records what a page does: console errors, uncaught exceptions, every network request.
"""
from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

CHROMIUM = "/usr/bin/chromium"

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--disable-default-apps", "--mute-audio",
         "--hide-scrollbars", "--remote-debugging-pipe"]


def chromium_path() -> Optional[str]:
    """The system Chromium, or None (the tests then skip, saying so)."""
    for cand in (os.environ.get("DETEVAL_CHROMIUM"), CHROMIUM, shutil.which("chromium")):
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    return None


class BrowserError(RuntimeError):
    pass


class Browser:
    """One headless Chromium with one page attached (flattened session)."""

    def __init__(self, executable: str, width: int = 1280, height: int = 900,
                 timeout: float = 60.0):
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="deteval-chromium-")
        cmd_r, self._cmd_w = os.pipe()  # we write commands, chromium reads fd 3
        self._out_r, out_w = os.pipe()  # chromium writes fd 4, we read
        # fds 3 and 4 in the child: move ours out of the way first
        def child():  # in the child: the pipe ends at fds 3 and 4 (inheritable after dup2)
            a = fcntl.fcntl(cmd_r, fcntl.F_DUPFD, 10)
            b = fcntl.fcntl(out_w, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)
        # our pipe ends are non-inheritable (os.pipe); close_fds would close 3 and 4 after
        # preexec_fn, hence close_fds=False
        self.proc = subprocess.Popen(
            [executable, *FLAGS, f"--user-data-dir={self.profile}",
             f"--window-size={width},{height}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=child, close_fds=False)
        os.close(cmd_r)
        os.close(out_w)
        self._buf = b""
        self._next = 0
        self.events: List[Dict[str, Any]] = []
        self.session = None
        deadline = time.monotonic() + timeout
        while True:  # the first tab can appear a moment after the browser answers
            targets = self.call("Target.getTargets")["targetInfos"]
            page = next((t for t in targets if t["type"] == "page"), None)
            if page is not None:
                break
            if time.monotonic() > deadline:
                raise BrowserError("Chromium opened no page")
            time.sleep(0.1)
        self.session = self.call("Target.attachToTarget", targetId=page["targetId"],
                                 flatten=True, session=False)["sessionId"]
        for domain in ("Runtime", "Log", "Network", "Page"):
            self.call(f"{domain}.enable")
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height,
                  deviceScaleFactor=1, mobile=False)

    # -- protocol
    def _read_message(self, deadline: float) -> dict:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("timed out waiting for Chromium")
            ready, _, _ = select.select([self._out_r], [], [], left)
            if ready:
                chunk = os.read(self._out_r, 1 << 20)
                if not chunk:
                    raise BrowserError("Chromium closed the debugging pipe (did it start?)")
                self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method: str, session: bool = True, **params) -> dict:
        self._next += 1
        msg = {"id": self._next, "method": method, "params": params}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self._cmd_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def wait_event(self, method: str, timeout: Optional[float] = None) -> dict:
        for e in self.events:
            if e["method"] == method:
                return e
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            e = self._read_message(deadline)
            if "method" in e:
                self.events.append(e)
                if e["method"] == method:
                    return e

    def pump(self, seconds: float = 0.2) -> None:
        """Collect the events that arrive within ``seconds``."""
        deadline = time.monotonic() + seconds
        try:
            while True:
                e = self._read_message(deadline)
                if "method" in e:
                    self.events.append(e)
        except BrowserError:
            pass

    # -- page
    def open(self, path: Path) -> None:
        self.events = [e for e in self.events if e["method"] != "Page.loadEventFired"]
        self.call("Page.navigate", url=Path(path).resolve().as_uri())
        self.wait_event("Page.loadEventFired")
        self.pump(0.3)

    def eval(self, expression: str) -> Any:
        r = self.call("Runtime.evaluate", expression=expression, returnByValue=True,
                      awaitPromise=True)
        if "exceptionDetails" in r:
            raise BrowserError(f"{expression!r}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def screenshot(self, path: Path) -> None:
        metrics = self.call("Page.getLayoutMetrics")
        size = metrics.get("cssContentSize") or metrics["contentSize"]
        shot = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                         clip={"x": 0, "y": 0, "width": size["width"],
                               "height": min(size["height"], 16000), "scale": 1})
        Path(path).write_bytes(base64.b64decode(shot["data"]))

    def errors(self) -> List[str]:
        """Console errors and uncaught exceptions seen so far."""
        out = []
        for e in self.events:
            p = e.get("params", {})
            if e["method"] == "Runtime.exceptionThrown":
                out.append(json.dumps(p.get("exceptionDetails", {}))[:500])
            elif e["method"] == "Runtime.consoleAPICalled" and p.get("type") in (
                    "error", "assert"):
                out.append(json.dumps(p.get("args", []))[:500])
            elif e["method"] == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.append(p["entry"].get("text", "")[:500])
        return out

    def requests(self) -> List[str]:
        """The URL of every request the page made."""
        return [e["params"]["request"]["url"] for e in self.events
                if e["method"] == "Network.requestWillBeSent"]

    def close(self) -> None:
        try:
            self.call("Browser.close", session=False)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._cmd_w, self._out_r):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
