"""results.py - every benchmark's raw results under bench/results/.

``keep(__file__)`` at the start of a benchmark's main copies what it prints
(stdout and stderr) to bench/results/NAME-YYYYMMDDTHHMMSSZ.txt, headed by the
command, the commit and the machine, as bench/results_lib.sh does for the
shell benchmarks.  A benchmark run from another one (make bench's run.sh)
writes into the outer one's file, not a file of its own; --help writes none.
SHARDKIT_BENCH_RESULTS=DIR writes elsewhere; =no, nowhere.
"""
import atexit
import datetime
import os
import subprocess
import sys


class _Tee:
    def __init__(self, stream, copy):
        self._stream, self._copy = stream, copy

    def write(self, text):
        self._copy.write(text)
        return self._stream.write(text)

    def flush(self):
        self._copy.flush()
        self._stream.flush()

    def __getattr__(self, name):
        return getattr(self._stream, name)


def keep(script):
    """Copy this process's output to a results file; return its path (or None)."""
    where = os.environ.get("SHARDKIT_BENCH_RESULTS", "")
    if os.environ.get("SHARDKIT_BENCH_KEEPING") or where == "no":
        return None
    if "-h" in sys.argv[1:] or "--help" in sys.argv[1:]:
        return None  # no results in a usage text
    os.environ["SHARDKIT_BENCH_KEEPING"] = "1"
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    folder = where or os.path.join(top, "bench", "results")
    os.makedirs(folder, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc)
    name = os.path.splitext(os.path.basename(script))[0]
    path = os.path.join(folder, "%s-%s.txt" % (name, now.strftime("%Y%m%dT%H%M%SZ")))
    try:
        commit = subprocess.run(["git", "-C", top, "describe", "--always", "--dirty"],
                                capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    copy = open(path, "w", buffering=1)
    copy.write("# command: %s\n# commit: %s\n# date: %s; cores: %d; load: %s\n" % (
        " ".join([script] + sys.argv[1:]), commit, now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        os.cpu_count() or 0, load))
    sys.stdout = _Tee(sys.stdout, copy)
    sys.stderr = _Tee(sys.stderr, copy)

    def said():
        sys.stdout.flush()
        sys.stderr.flush()
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
        copy.close()
        sys.stderr.write("raw results: %s\n" % path)
    atexit.register(said)
    return path
