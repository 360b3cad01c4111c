"""Ctrl-C and close() during a remote read from a server that stalls in
the middle of a response: the loader stops within a fraction of a second,
whatever its thread count, and the process then exits (every wait of the
read path, HTTP transfers included, looks at its cancellation at least
every 100 ms).  The server is a Python HTTP server in a process of its own,
started and stopped here by its pid."""
import json
import os
import select
import signal
import subprocess
import sys
import time

import pytest

from conftest import PYTHON, subprocess_env

# Serves DIR: manifest.json and each shard's opening suffix ("bytes=-N")
# whole; any other range of a shard gets its headers and half its bytes,
# then nothing (the connection stays open).
SERVER = r"""
import os, re, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
root = sys.argv[1]
class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass
    def do_GET(self):
        path = os.path.join(root, self.path.lstrip("/"))
        if not os.path.isfile(path):
            self.send_error(404)
            return
        data = open(path, "rb").read()
        rng = self.headers.get("Range")
        if rng is None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        first, last = re.fullmatch(r"bytes=(\d*)-(\d*)", rng).groups()
        start = max(0, len(data) - int(last)) if first == "" else int(first)
        end = len(data) - 1 if first == "" else min(int(last), len(data) - 1)
        body = data[start:end + 1]
        self.send_response(206)
        self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if first == "":
            self.wfile.write(body)
            return
        self.wfile.write(body[:len(body) // 2])
        self.wfile.flush()
        time.sleep(3600)  # stalled mid-response
server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
"""

# Reads the stalled dataset (argv: URL, threads, how) and reports, as JSON,
# how long the loader took to stop: "close" calls close() from another
# thread while next() waits; "sigint" waits for the parent's SIGINT and
# then closes the loader.
CHILD = r"""
import json, sys, threading, time
import shardkit
url, threads, how = sys.argv[1], int(sys.argv[2]), sys.argv[3]
ds = shardkit.Dataset(url, window=65536, timeout=60, retries=8)
loader = shardkit.Loader(ds, 4, threads=threads, shuffle=False, transform=[shardkit.CenterCrop(32)])
it = iter(loader)
result = {}
if how == "close":
    asked = []
    timer = threading.Timer(1.0, lambda: (asked.append(time.monotonic()), loader.close()))
    timer.start()
try:
    print("reading", flush=True)
    next(it)
    result["raised"] = None
except BaseException as e:
    result["raised"] = type(e).__name__
    result["message"] = str(e)
stopped = time.monotonic()
if how == "close":
    timer.join()
    result["close_to_raise"] = stopped - asked[0]
else:
    loader.close()
    result["close"] = time.monotonic() - stopped
print(json.dumps(result), flush=True)
"""


@pytest.fixture
def stalled_server(jpeg256):
    server = subprocess.Popen([PYTHON, "-c", SERVER, jpeg256], stdout=subprocess.PIPE,
                              text=True)
    try:
        port = int(server.stdout.readline())
        yield f"http://127.0.0.1:{port}"
    finally:
        os.kill(server.pid, signal.SIGKILL)
        server.wait()


def run_child(url, threads, how):
    """(the child's report, seconds from the SIGINT, or from the report,
    to the child's exit) - the whole run bounded to a minute."""
    child = subprocess.Popen([PYTHON, "-c", CHILD, url, str(threads), how], env=subprocess_env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "reading"
        if how == "sigint":
            time.sleep(1.0)  # next() is waiting for the stalled window by now
            child.send_signal(signal.SIGINT)
        start = time.monotonic()
        ready, _, _ = select.select([child.stdout], [], [], 60)
        assert ready, f"no report within 60 s ({how}, threads={threads})"
        report = json.loads(child.stdout.readline())
        report["to_report"] = time.monotonic() - start
        child.wait(timeout=60)
        report["to_exit"] = time.monotonic() - start
    finally:
        child.kill()
        child.wait()
    assert child.returncode == 0, child.stderr.read()[-2000:]
    return report


@pytest.mark.parametrize("threads", [2, 0])
def test_close_during_a_stalled_read_stops_the_loader_at_once(stalled_server, threads):
    report = run_child(stalled_server, threads, "close")
    assert report["raised"] == "ValueError" and report["message"] == "the loader is closed", \
        report
    # the wait slice (100 ms) and the reads' polls, on a machine that may be loaded
    assert report["close_to_raise"] < 1.5, report
    assert report["to_exit"] < 5, report


@pytest.mark.parametrize("threads", [2, 0])
def test_ctrl_c_during_a_stalled_read_stops_the_loader_at_once(stalled_server, threads):
    report = run_child(stalled_server, threads, "sigint")
    assert report["raised"] == "KeyboardInterrupt", report
    assert report["to_report"] < 1.5 and report["close"] < 1.0, report
    assert report["to_exit"] < 5, report
