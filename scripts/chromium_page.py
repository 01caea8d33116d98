"""Drive headless Chromium over the DevTools protocol on a pipe (``--remote-debugging-pipe``):
no browser driver, no network port, nothing to install but Debian's ``chromium``.

Used by the print test (tests/report/test_report_print.py: print media, page widths, PDF) and
to save the screenshots of the report and of the notebook display in ``docs/images/``::

    python scripts/chromium_page.py shot REPORT.html docs/images/report.png [--width 1100]
    python scripts/chromium_page.py pdf REPORT.html out.pdf [--paper a4|letter]
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

# paper width and height in inches (what Page.printToPDF takes)
PAPER = {"a4": (8.27, 11.69), "letter": (8.5, 11.0)}
CSS_PX_PER_INCH = 96

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--remote-debugging-pipe",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _above(fd: int, lowest: int) -> int:
    """``fd`` duplicated to a descriptor >= ``lowest`` (the original closed)."""
    import fcntl

    moved = fcntl.fcntl(fd, fcntl.F_DUPFD, lowest)
    os.close(fd)
    return moved


class Browser:
    """One headless Chromium and one page, driven by DevTools commands over fds 3 and 4."""

    def __init__(self, chromium: str, profile: Path, timeout: float = 60.0) -> None:
        to_browser_r, to_browser_w = os.pipe()
        from_browser_r, from_browser_w = os.pipe()
        # the browser's ends moved above 3 and 4 first, so that placing one cannot overwrite
        # the other
        to_browser_r = _above(to_browser_r, 10)
        from_browser_w = _above(from_browser_w, 10)
        # Chromium reads commands on fd 3 and writes replies on fd 4; the Debian launcher is a
        # shell script, so the descriptors are moved into place by bash (dash takes no fd
        # above 9), then exec'd
        command = [
            shutil.which("bash") or "bash",
            "-c",
            f'exec "$@" 3<&{to_browser_r} 4>&{from_browser_w}',
            "bash",
            chromium,
            *FLAGS,
            f"--user-data-dir={profile}",
            "about:blank",
        ]
        self._proc = subprocess.Popen(
            command,
            pass_fds=(to_browser_r, from_browser_w),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._out = os.fdopen(to_browser_w, "wb")
        self._in = from_browser_r
        self._buffer = b""
        self._next_id = 0
        self._events: list[dict[str, Any]] = []
        self._timeout = timeout
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        self._session = self.send("Target.attachToTarget", targetId=target, flatten=True)[
            "sessionId"
        ]
        self.send("Page.enable", page=True)

    def _message(self) -> dict[str, Any]:
        import select

        while b"\0" not in self._buffer:
            ready, _, _ = select.select([self._in], [], [], self._timeout)
            if not ready:
                raise TimeoutError("chromium did not answer in time")
            chunk = os.read(self._in, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self._buffer += chunk
        raw, _, self._buffer = self._buffer.partition(b"\0")
        message: dict[str, Any] = json.loads(raw)
        return message

    def send(self, method: str, page: bool = False, **params: Any) -> dict[str, Any]:
        """Send a DevTools command (to the page's session when ``page``); its result."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if page:
            message["sessionId"] = self._session
        self._out.write(json.dumps(message).encode("utf-8") + b"\0")
        self._out.flush()
        while True:
            reply = self._message()
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply["result"]
                return result
            self._events.append(reply)

    def _wait_for(self, event: str) -> None:
        for i, seen in enumerate(self._events):
            if seen.get("method") == event:
                del self._events[i]
                return
        while True:
            message = self._message()
            if message.get("method") == event:
                return
            self._events.append(message)

    def open(self, page: Path, width: int = 1100, height: int = 900, media: str = "") -> None:
        """Load ``page`` in a viewport ``width`` CSS pixels wide, with ``media`` emulated
        (``print``; empty for the screen)."""
        self.send(
            "Emulation.setDeviceMetricsOverride",
            page=True,
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )
        self.send("Emulation.setEmulatedMedia", page=True, media=media)
        self.send("Page.navigate", page=True, url=page.resolve().as_uri())
        self._wait_for("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        """The JSON value of a JavaScript expression in the page."""
        result = self.send("Runtime.evaluate", page=True, expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, png: Path, height: int | None = None) -> None:
        """The whole page (not just the viewport) as a PNG; its top ``height`` CSS pixels
        when given."""
        params: dict[str, Any] = {"format": "png", "captureBeyondViewport": True}
        if height is not None:
            width = self.evaluate("document.documentElement.scrollWidth")
            full = self.evaluate("document.documentElement.scrollHeight")
            params["clip"] = {
                "x": 0,
                "y": 0,
                "width": width,
                "height": min(height, full),
                "scale": 1,
            }
        png.write_bytes(
            base64.b64decode(self.send("Page.captureScreenshot", page=True, **params)["data"])
        )

    def pdf(self, out: Path, paper: str = "a4") -> bytes:
        """Print the page as Chromium's print dialog would (the page's @page margins)."""
        width, height = PAPER[paper]
        data = base64.b64decode(
            self.send(
                "Page.printToPDF",
                page=True,
                paperWidth=width,
                paperHeight=height,
                printBackground=True,
                preferCSSPageSize=False,
                displayHeaderFooter=False,
            )["data"]
        )
        out.write_bytes(data)
        return data

    def close(self) -> None:
        with contextlib.suppress(RuntimeError, OSError, TimeoutError):
            self.send("Browser.close")
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._out.close()
        os.close(self._in)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# Elements wider than the page, or sticking out of it, under the current media.
OVERFLOW_JS = """(() => {
  const width = document.documentElement.clientWidth;
  const out = [];
  for (const el of document.querySelectorAll('body *')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;
    const clipped = el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX !== 'visible';
    if (r.right > width + 0.5 || r.left < -0.5 || clipped) {
      out.push(`${el.tagName.toLowerCase()}.${el.getAttribute('class') || ''} ${Math.round(r.left)}..${Math.round(r.right)} (page ${width})${clipped ? ' clipped' : ''}`);
    }
  }
  return {width, overflowing: out};
})()"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["shot", "pdf"])
    parser.add_argument("page", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--width", type=int, default=1100)
    parser.add_argument("--paper", choices=sorted(PAPER), default="a4")
    args = parser.parse_args(argv)
    chromium = find_chromium()
    if chromium is None:
        print("chromium is not on PATH (apt-get install chromium)", file=sys.stderr)
        return 2
    import tempfile

    with tempfile.TemporaryDirectory() as profile, Browser(chromium, Path(profile)) as browser:
        if args.action == "shot":
            browser.open(args.page, width=args.width)
            browser.screenshot(args.out)
        else:
            browser.open(args.page, media="print")
            browser.pdf(args.out, args.paper)
    print(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
