#!/usr/bin/env python3
"""curl_transfer.py - the transfer bound of a shard reader: fetch every shard
of a dataset from a server with curl alone.

    curl_transfer.py URL DIR [--connections N] [--header H]

DIR holds the dataset's manifest.json (the same dataset served under URL);
every shard is fetched from URL/FILE in 8 MiB ranges, N at once (default 8,
as the reader), to /dev/null, with HEADER on each request (S3 needs
"x-amz-content-sha256: UNSIGNED-PAYLOAD").  The byte count is checked.
Prints one JSON object: bytes, samples, seconds.  (In a curl config, options
such as range apply to every URL until `next` starts a new group.)
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

WINDOW = 8 << 20

p = argparse.ArgumentParser()
p.add_argument("url")
p.add_argument("dir")
p.add_argument("--connections", type=int, default=8)
p.add_argument("--header", action="append", default=[])
a = p.parse_args()
m = json.load(open(os.path.join(a.dir, "manifest.json")))
groups = []
for s in m["shards"]:
    for start in range(0, s["bytes"], WINDOW):
        end = min(start + WINDOW, s["bytes"]) - 1
        lines = [f'url = "{a.url}/{s["file"]}"', f"range = {start}-{end}", "output = /dev/null",
                 "silent", "show-error", "fail", 'write-out = "%{size_download}\\n"']
        lines += [f'header = "{h}"' for h in a.header]
        groups.append("\n".join(lines))
with tempfile.NamedTemporaryFile("w", suffix=".cfg", delete=False) as cfg:
    cfg.write("\nnext\n".join(groups) + "\n")
try:
    t0 = time.monotonic()
    out = subprocess.run(["curl", "--no-progress-meter", "--parallel", "--parallel-max",
                          str(a.connections), "-K", cfg.name], check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    t1 = time.monotonic()
finally:
    os.unlink(cfg.name)
want = sum(s["bytes"] for s in m["shards"])
got = sum(int(line) for line in out.split() if line.strip())
if got != want:
    sys.exit(f"curl_transfer.py: curl fetched {got} bytes of {want}")
print(json.dumps({"bytes": got, "samples": sum(s["samples"] for s in m["shards"]),
                  "seconds": t1 - t0}))
