#!/usr/bin/env python3
"""render.py - open HTML reports in a real browser (headless Chromium) and
record what it did: every console message, page error and log entry, every
network request, the DOM as rendered, screenshots on a desktop and on a
phone, whether the page overflows a phone's width, and a print to PDF.

    render.py [--full] OUT_DIR FILE.html [FILE.html ...]

For each FILE it writes OUT_DIR/NAME.dom.html, NAME.png (desktop, the top
of the page), NAME.phone.png (a phone, the top of the page), NAME.pdf and,
with --full, NAME.full.png (desktop, the whole page), and prints one JSON
object per line:
    {"file", "console": [...], "exceptions": [...], "log": [...],
     "requests": [...], "dom", "screenshot", "full_screenshot" (or null),
     "phone_screenshot", "phone_overflow_px", "pdf", "pdf_pages",
     "scripts", "images", "image_sources", "title"}
"requests" holds every request the page made other than the load of FILE
itself and data: URIs, which fetch nothing (a self-contained report makes
none).  "image_sources" has each img element's src, cut to its first 40
characters, and whether the browser decoded it: [src, decoded].  Exit status 0 when every page
loaded, 1 otherwise (a browser that cannot start included).

It speaks the DevTools protocol to one Chromium over --remote-debugging-pipe
(file descriptors 3 and 4, NUL-terminated JSON), with the standard library
only.  Chromium runs with the flags that keep it off the network by itself
(no background networking, component updates, sync), and as root needs
--no-sandbox.  Set CHROMIUM to use another binary.
"""
import base64
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time

DESKTOP = {"width": 1000, "height": 800, "deviceScaleFactor": 1, "mobile": False}
PHONE = {"width": 390, "height": 844, "deviceScaleFactor": 2, "mobile": True}
FULL_PAGE_MAX = 6000          # tallest full-page screenshot, CSS pixels
LOAD_TIMEOUT = 60.0
QUIET = 0.5                   # seconds without events after load before reading the page

FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-default-apps", "--disable-extensions", "--hide-scrollbars",
    "--mute-audio", "--remote-debugging-pipe",
]


class Browser:
    """One Chromium, spoken to over the DevTools pipe."""

    def __init__(self):
        binary = os.environ.get("CHROMIUM") or shutil.which("chromium") or \
            shutil.which("chromium-browser")
        if not binary:
            raise RuntimeError("chromium not found (scripts/deps.sh installs it)")
        self.profile = tempfile.mkdtemp(prefix="shardkit-chromium.")
        to_child_r, self.to_child = os.pipe()
        self.from_child, from_child_w = os.pipe()
        self.log = open(os.path.join(self.profile, "stderr.log"), "wb")

        def child_fds():
            # Chromium reads commands on fd 3 and answers on fd 4; nothing
            # else of this process is inherited
            a, b = os.dup(to_child_r), os.dup(from_child_w)
            os.dup2(a, 3)
            os.dup2(b, 4)
            os.closerange(5, os.sysconf("SC_OPEN_MAX"))
        self.proc = subprocess.Popen(
            [binary] + FLAGS + ["--user-data-dir=" + self.profile, "about:blank"],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log,
            preexec_fn=child_fds, close_fds=False)
        os.close(to_child_r)
        os.close(from_child_w)
        self.next_id = 0
        self.replies = {}
        self.events = queue.Queue()
        self.cond = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        buf = b""
        while True:
            chunk = os.read(self.from_child, 1 << 16)
            if not chunk:
                break
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                msg = json.loads(raw)
                if "id" in msg:
                    with self.cond:
                        self.replies[msg["id"]] = msg
                        self.cond.notify_all()
                else:
                    self.events.put(msg)
        with self.cond:
            self.replies[None] = {"error": {"message": "the browser went away"}}
            self.cond.notify_all()

    def send(self, method, params=None, session=None, timeout=LOAD_TIMEOUT):
        self.next_id += 1
        mid = self.next_id
        msg = {"id": mid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.to_child, json.dumps(msg).encode() + b"\0")
        deadline = time.time() + timeout
        with self.cond:
            while mid not in self.replies and None not in self.replies:
                left = deadline - time.time()
                if left <= 0:
                    raise RuntimeError("%s: no answer in %.0f s" % (method, timeout))
                self.cond.wait(left)
            reply = self.replies.pop(mid, None) or self.replies[None]
        if "error" in reply:
            raise RuntimeError("%s: %s" % (method, reply["error"].get("message")))
        return reply.get("result", {})

    def close(self):
        try:
            self.send("Browser.close", timeout=10)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.profile, ignore_errors=True)


class Page:
    """A tab, with every event of its session recorded."""

    def __init__(self, browser):
        self.b = browser
        target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.target = target
        self.session = browser.send("Target.attachToTarget",
                                    {"targetId": target, "flatten": True})["sessionId"]
        self.console, self.exceptions, self.log, self.requests = [], [], [], []
        self.loads = 0
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(domain + ".enable")

    def send(self, method, params=None, timeout=LOAD_TIMEOUT):
        return self.b.send(method, params, self.session, timeout)

    def pump(self, seconds):
        """Record this session's events for `seconds`; True when any came."""
        end = time.time() + seconds
        got = False
        while True:
            left = end - time.time()
            if left <= 0:
                return got
            try:
                ev = self.b.events.get(timeout=left)
            except queue.Empty:
                return got
            if ev.get("sessionId") != self.session:
                continue
            got = True
            m, p = ev["method"], ev.get("params", {})
            if m == "Runtime.consoleAPICalled":
                text = " ".join(str(a.get("value", a.get("description", "")))
                                for a in p.get("args", []))
                self.console.append({"type": p.get("type"), "text": text})
            elif m == "Runtime.exceptionThrown":
                self.exceptions.append(p.get("exceptionDetails", {}).get("text"))
            elif m == "Log.entryAdded":
                e = p.get("entry", {})
                self.log.append({"level": e.get("level"), "source": e.get("source"),
                                 "text": e.get("text"), "url": e.get("url")})
            elif m == "Network.requestWillBeSent":
                self.requests.append(p.get("request", {}).get("url"))
            elif m == "Page.loadEventFired":
                self.loads += 1

    def load(self, url):
        before = self.loads
        self.send("Page.navigate", {"url": url})
        deadline = time.time() + LOAD_TIMEOUT
        while self.loads == before:
            if time.time() > deadline:
                raise RuntimeError("%s did not load in %.0f s" % (url, LOAD_TIMEOUT))
            self.pump(0.1)
        while self.pump(QUIET):  # late messages, late requests
            pass

    def evaluate(self, expr):
        r = self.send("Runtime.evaluate", {"expression": expr, "returnByValue": True})
        return r.get("result", {}).get("value")

    def screenshot(self, path, full=False):
        params = {"format": "png"}
        if full:
            size = self.send("Page.getLayoutMetrics")["cssContentSize"]
            params["clip"] = {"x": 0, "y": 0, "width": size["width"],
                              "height": min(size["height"], FULL_PAGE_MAX), "scale": 1}
            params["captureBeyondViewport"] = True
        data = self.send("Page.captureScreenshot", params)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def close(self):
        self.b.send("Target.closeTarget", {"targetId": self.target})


def render(browser, out_dir, path, full):
    path = os.path.abspath(path)
    name = os.path.splitext(os.path.basename(path))[0]
    url = "file://" + path
    page = Page(browser)
    result = {"file": path}
    try:
        page.send("Emulation.setDeviceMetricsOverride", DESKTOP)
        page.load(url)
        result["title"] = page.evaluate("document.title")
        result["scripts"] = page.evaluate("document.scripts.length")
        result["images"] = page.evaluate("document.images.length")
        result["image_sources"] = page.evaluate(
            "Array.from(document.images, i => [i.src.slice(0, 40), i.complete && "
            "i.naturalWidth > 0])")
        dom = page.evaluate("document.documentElement.outerHTML")
        result["dom"] = os.path.join(out_dir, name + ".dom.html")
        with open(result["dom"], "w", encoding="utf-8") as f:
            f.write(dom)
        result["screenshot"] = os.path.join(out_dir, name + ".png")
        page.screenshot(result["screenshot"])
        result["full_screenshot"] = None
        if full:
            result["full_screenshot"] = os.path.join(out_dir, name + ".full.png")
            page.screenshot(result["full_screenshot"], full=True)

        result["pdf"] = os.path.join(out_dir, name + ".pdf")
        pdf = base64.b64decode(page.send("Page.printToPDF", {"printBackground": True})["data"])
        with open(result["pdf"], "wb") as f:
            f.write(pdf)
        result["pdf_pages"] = pdf.count(b"/Type /Page") - pdf.count(b"/Type /Pages")

        page.send("Emulation.setDeviceMetricsOverride", PHONE)
        page.load(url)  # again, so the page lays itself out for the phone's viewport
        result["phone_overflow_px"] = page.evaluate(
            "Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)"
            " - window.innerWidth")
        result["phone_screenshot"] = os.path.join(out_dir, name + ".phone.png")
        page.screenshot(result["phone_screenshot"])
    finally:
        result["console"] = page.console
        result["exceptions"] = page.exceptions
        result["log"] = page.log
        result["requests"] = [u for u in page.requests if u != url and not u.startswith("data:")]
        page.close()
    return result


def main(argv):
    full = len(argv) > 1 and argv[1] == "--full"
    if full:
        argv = argv[:1] + argv[2:]
    if len(argv) < 3:
        print(__doc__.strip().splitlines()[3].strip(), file=sys.stderr)
        return 2
    out_dir = argv[1]
    os.makedirs(out_dir, exist_ok=True)
    status = 0
    browser = Browser()
    try:
        for path in argv[2:]:
            try:
                print(json.dumps(render(browser, out_dir, path, full)), flush=True)
            except Exception as e:  # report it, go on with the next page
                print(json.dumps({"file": path, "failed": str(e)}), flush=True)
                status = 1
    finally:
        browser.close()
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
