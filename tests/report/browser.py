"""Headless Chromium driven over the DevTools protocol on a pipe (--remote-debugging-pipe: JSON messages
ending in a NUL byte on file descriptors 3 and 4), so the tests need no WebDriver and no websocket library.

`Browser().open(path)` loads a file:// page and collects what a person would never see: console messages,
uncaught exceptions, JavaScript dialogs (accepted, and recorded) and the browser's log (Content Security
Policy reports, failed loads); `evaluate` reads the live DOM; `screenshot` writes a PNG.

    python -m tests.report.browser REPORT.html OUT.png [WIDTH HEIGHT]
"""

import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "chrome")
TIMEOUT = 30.0


def chromium() -> str | None:
    """The browser's executable, or None."""
    return next(filter(None, map(shutil.which, CANDIDATES)), None)


@dataclass
class Loaded:
    """What happened while a page loaded."""
    console: list[dict] = field(default_factory=list)  # {type, text}
    exceptions: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)  # "alert: message"
    log: list[dict] = field(default_factory=list)  # {level, source, text}: CSP violations, failed loads

    def errors(self) -> list[str]:
        """Everything a clean page never produces."""
        return ([f"console.{m['type']}: {m['text']}" for m in self.console] + self.exceptions + self.dialogs +
                [f"log {m['level']} ({m['source']}): {m['text']}" for m in self.log])


class Browser:
    def __init__(self, width: int = 1280, height: int = 900):
        executable = chromium()
        if executable is None:
            raise RuntimeError("no Chromium: apt-get install chromium (make browser)")
        self._profile = tempfile.mkdtemp(prefix="tokenmill-chromium-")
        commands_read, self._commands = os.pipe()
        self._replies, replies_write = os.pipe()
        flags = ["--headless", "--disable-gpu", "--remote-debugging-pipe", "--no-first-run",
                 "--no-default-browser-check", f"--user-data-dir={self._profile}", f"--window-size={width},{height}",
                 "--hide-scrollbars", "--disable-extensions", "--disable-background-networking"]
        if os.geteuid() == 0:
            flags.append("--no-sandbox")  # Chromium refuses to start as root with its sandbox

        def descriptors():
            os.dup2(commands_read, 3)
            os.dup2(replies_write, 4)

        self._process = subprocess.Popen([executable, *flags, "about:blank"], pass_fds=(3, 4),
                                         preexec_fn=descriptors, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL)
        os.close(commands_read)
        os.close(replies_write)
        self._buffer, self._next, self._events = b"", 0, []
        target = self._call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self._session = self._call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self._call(f"{domain}.enable", session=True)
        self._call("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1,
                                                          "mobile": False}, session=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        self._process.kill()
        self._process.wait()
        for fd in (self._commands, self._replies):
            os.close(fd)
        shutil.rmtree(self._profile, ignore_errors=True)

    def _send(self, method: str, params: dict | None, session: bool) -> int:
        self._next += 1
        message = {"id": self._next, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self._session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        return self._next

    def _receive(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("Chromium did not answer")
            chunk = os.read(self._replies, 1 << 16)
            if not chunk:
                raise RuntimeError("Chromium closed its pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def _call(self, method: str, params: dict | None = None, session: bool = False) -> dict:
        number = self._send(method, params, session)
        deadline = time.monotonic() + TIMEOUT
        while True:
            message = self._receive(deadline)
            if message.get("id") == number:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self._events.append(message)

    def open(self, path) -> Loaded:
        """Loads a file and waits for its load event; what happened on the way."""
        self._events.clear()
        self._call("Page.navigate", {"url": f"file://{os.path.abspath(path)}"}, session=True)
        loaded, deadline = Loaded(), time.monotonic() + TIMEOUT
        events, done = list(self._events), False
        while not done:
            for event in events:
                done = self._record(event, loaded) or done
            events = [] if done else [self._receive(deadline)]
        self.evaluate("0")  # events of the page's last script arrive before this answer
        for event in self._events:
            self._record(event, loaded)
        return loaded

    def _record(self, event: dict, loaded: Loaded) -> bool:
        """Adds an event to `loaded`; True at the page's load event."""
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.consoleAPICalled":
            loaded.console.append({"type": params["type"], "text": " ".join(
                str(a.get("value", a.get("description", ""))) for a in params.get("args", []))})
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            loaded.exceptions.append(details.get("exception", {}).get("description") or details.get("text", ""))
        elif method == "Page.javascriptDialogOpening":
            loaded.dialogs.append(f"{params.get('type')}: {params.get('message')}")
            self._send("Page.handleJavaScriptDialog", {"accept": True}, session=True)
        elif method == "Log.entryAdded":
            entry = params.get("entry", {})
            loaded.log.append({"level": entry.get("level"), "source": entry.get("source"), "text": entry.get("text")})
        return method == "Page.loadEventFired"

    def evaluate(self, expression: str):
        """The value of a JavaScript expression in the page (JSON-serializable values)."""
        result = self._call("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    def screenshot(self, png_path, full_page: bool = False) -> None:
        params = {"format": "png", "captureBeyondViewport": full_page}
        data = self._call("Page.captureScreenshot", params, session=True)["data"]
        with open(png_path, "wb") as f:
            f.write(base64.b64decode(data))


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 4):
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    width, height = (int(argv[2]), int(argv[3])) if len(argv) == 4 else (1280, 900)
    with Browser(width, height) as browser:
        loaded = browser.open(argv[0])
        browser.screenshot(argv[1])
    for error in loaded.errors():
        print(error, file=sys.stderr)
    return 1 if loaded.errors() else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
