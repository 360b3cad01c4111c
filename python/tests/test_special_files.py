"""A FIFO (or another file that is not a regular file) where a dataset's
manifest or shard should be is refused at once, naming it: opening it must
not wait for a writer that never comes.  Each case runs in a child process
under a time limit, so that a hang fails the test instead of the session."""
import os
import socket
import subprocess
import textwrap

import pytest

from conftest import PYTHON, TOP, shardify, subprocess_env

# seconds a refusal may take (sanitizer builds, a loaded machine)
LIMIT = 30

CHILD = textwrap.dedent("""
    import sys
    import shardkit
    try:
        ds = shardkit.Dataset(sys.argv[1])
        if len(sys.argv) > 2:
            ds[0]
    except OSError as e:  # a FileNotFoundError would say the file is missing
        print("FileNotFoundError" if isinstance(e, FileNotFoundError) else "OSError", e,
              sep=": ")
    else:
        print("no error")
""")


def outcome(*args):
    """What the child says when it opens the dataset (and reads sample 0)."""
    try:
        r = subprocess.run([PYTHON, "-c", CHILD, *args], env=subprocess_env(),
                           capture_output=True, text=True, timeout=LIMIT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"opening {args[0]} hung: still waiting after {LIMIT} s")
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """A small dataset of generated images."""
    base = tmp_path_factory.mktemp("special")
    raw = str(base / "raw")
    subprocess.run([PYTHON, os.path.join(TOP, "examples", "make_demo_data.py"), raw,
                    "--count", "6"], check=True, stdout=subprocess.DEVNULL)
    return shardify(raw, str(base / "ds"), "--size", "32")


def test_fifo_manifest_is_refused_at_once(tmp_path):
    os.mkfifo(tmp_path / "manifest.json")
    said = outcome(str(tmp_path))
    assert said == (f"OSError: cannot read manifest '{tmp_path}/manifest.json': "
                    "not a regular file: fifo")


def test_socket_manifest_is_named_as_a_socket(tmp_path):
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(tmp_path / "manifest.json"))
        said = outcome(str(tmp_path))
    assert said.endswith(f"'{tmp_path}/manifest.json': not a regular file: socket"), said


def test_fifo_shard_is_refused_when_read(small, tmp_path):
    copy = tmp_path / "ds"
    subprocess.run(["cp", "-r", small, str(copy)], check=True)
    shard = sorted(f for f in os.listdir(copy) if f.endswith(".shard"))[0]
    os.unlink(copy / shard)
    os.mkfifo(copy / shard)
    said = outcome(str(copy), "read")
    assert said.startswith("OSError: ") and f"{shard}: not a regular file: fifo" in said, said
