"""A headless Chromium for the HTML report's tests, driven over its DevTools protocol (CDP) with a small websocket
client: no browser download, no test framework of its own.

`Browser` starts Debian's /usr/bin/chromium with a fresh profile, its debugging port on 127.0.0.1 (port 0: it
picks one and prints it), and every background service off; `open(url)` loads a page in a new tab with the network
emulated offline and records what a page should never do here: a request other than the page's own file, a console
message at error level, a script exception, a CSP violation (Chromium logs it as an error). The tests then read the
DOM with `evaluate` and take screenshots.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from websockets.sync.client import ClientConnection, connect

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = (
    "--headless",
    "--no-sandbox",  # root in a container: Chromium's sandbox needs user namespaces it may not have
    "--disable-gpu",
    "--disable-dev-shm-usage",  # a container's /dev/shm may be 64 MB
    "--hide-scrollbars",  # a screenshot as wide as the window
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--host-resolver-rules=MAP * ~NOTFOUND",  # no name resolves: nothing could leave even if the page asked
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
)
TIMEOUT = 30.0


@dataclass
class Page:
    """One tab: its CDP session, and what it did since it was opened."""

    browser: Browser
    session: str
    url: str
    requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        return self.browser.call(method, params, self.session)

    def evaluate(self, expression: str) -> Any:
        """The JSON value of a JavaScript expression in the page (DevTools evaluates it, not the page's own CSP)."""
        found = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in found:
            raise AssertionError(f"{expression}: {found['exceptionDetails']}")
        return found["result"].get("value")

    def screenshot(self, path: Path, width: int, mobile: bool = False) -> bytes:
        """A PNG of the whole page at `width` CSS pixels (a phone's with `mobile`)."""
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=900, deviceScaleFactor=1, mobile=mobile)
        shot = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        data = base64.b64decode(shot["data"])
        path.write_bytes(data)
        return data


class Browser:
    def __init__(self) -> None:
        self.profile = Path(tempfile.mkdtemp(prefix="fabriccheck-chromium-"))
        self.log = self.profile / "chromium.log"
        with self.log.open("w") as log:
            self.process = subprocess.Popen(
                [str(CHROMIUM), *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
        self.stack = contextlib.ExitStack()  # websockets closes the connection on leaving its context
        self.socket: ClientConnection = self.stack.enter_context(
            connect(self._address(), max_size=64 * 2**20, open_timeout=TIMEOUT)
        )
        self.ids = itertools.count(1)
        self.pages: dict[str, Page] = {}

    def _address(self) -> str:
        """The browser's websocket address: Chromium writes its port and path to DevToolsActivePort in the profile
        once the port is open."""
        active = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline and self.process.poll() is None:
            lines = active.read_text().split() if active.exists() else []
            if len(lines) >= 2:
                return f"ws://127.0.0.1:{lines[0]}{lines[1]}"
            time.sleep(0.05)
        said = self.log.read_text(errors="replace")[-2000:]
        self.close()
        raise RuntimeError(f"chromium did not open its debugging port; it said:\n{said}")

    def call(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> dict[str, Any]:
        """Send one command and wait for its answer, recording the events that come before it."""
        number = next(self.ids)
        message: dict[str, Any] = {"id": number, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        self.socket.send(json.dumps(message))
        deadline = time.monotonic() + TIMEOUT
        while True:
            answer = json.loads(self.socket.recv(timeout=max(0.1, deadline - time.monotonic())))
            if answer.get("id") == number:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                result: dict[str, Any] = answer.get("result", {})
                return result
            self._event(answer)

    def _event(self, event: dict[str, Any]) -> None:
        page = self.pages.get(event.get("sessionId", ""))
        if page is None:
            return
        method, params = event.get("method"), event.get("params", {})
        if method == "Network.requestWillBeSent":
            page.requests.append(params["request"]["url"])
        elif method == "Runtime.exceptionThrown":
            page.errors.append("exception: " + json.dumps(params["exceptionDetails"])[:500])
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert", "warning"):
            page.errors.append(f"console.{params['type']}: " + json.dumps(params.get("args"))[:500])
        elif method == "Log.entryAdded" and params["entry"]["level"] in ("error", "warning"):
            entry = params["entry"]
            page.errors.append(
                f"log {entry['level']} ({entry.get('source')}): {entry.get('text')} {entry.get('url', '')}"
            )

    def wait_for(self, page: Page, method: str) -> None:
        """Read events until `method` arrives for `page`."""
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            event = json.loads(self.socket.recv(timeout=max(0.1, deadline - time.monotonic())))
            self._event(event)
            if event.get("method") == method and event.get("sessionId") == page.session:
                return
        raise TimeoutError(f"{method} did not come within {TIMEOUT} s")

    def open(self, url: str) -> Page:
        """`url` loaded in a new tab with the network offline, after its load event."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = self.pages[session] = Page(self, session, url)
        for domain in ("Page", "Network", "Runtime", "Log"):
            page.call(f"{domain}.enable")
        page.call(
            "Network.emulateNetworkConditions", offline=True, latency=0, downloadThroughput=-1, uploadThroughput=-1
        )
        page.call("Page.navigate", url=url)
        self.wait_for(page, "Page.loadEventFired")
        return page

    def close(self) -> None:
        if getattr(self, "stack", None) is not None:
            self.stack.close()
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
