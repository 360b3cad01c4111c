"""shardkit.Dataset(location, connections=, window=, window_cache=, retries=,
timeout=): how a remote dataset is read reaches the C reader's requests
(window sizes, retries, time-outs, seen by a real HTTP server on loopback),
survives pickling, and a value out of range is refused naming it; cache=,
window_cache's deprecated older name, still works and warns."""
import os
import pickle
import re
import socket
import threading
import time
import warnings
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

import shardkit


class Server:
    """A loopback HTTP server of the files of `root`, with range requests
    ("bytes=A-B", "bytes=-N"), that logs (path, range header) of every
    request; or, with `status`, answering every request with that status."""

    def __init__(self, root=None, status=None):
        self.log = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                rng = self.headers.get("Range")
                server.log.append((self.path, rng))
                if status is not None:
                    self.send_response(status)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                path = os.path.join(root, self.path.lstrip("/"))
                if not os.path.isfile(path):
                    self.send_error(404)
                    return
                with open(path, "rb") as f:
                    data = f.read()
                if rng is None:
                    self.send_response(200)
                    body = data
                else:
                    first, last = re.fullmatch(r"bytes=(\d*)-(\d*)", rng).groups()
                    if first == "":
                        start, end = max(0, len(data) - int(last)), len(data) - 1
                    else:
                        start, end = int(first), min(int(last), len(data) - 1)
                    body = data[start:end + 1]
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()

    def shard_requests(self):
        return [(p, r) for p, r in self.log if p.endswith(".shard")]


def every_sample(ds):
    return [(s.key, s.label, s.image.tobytes()) for s in ds]


def test_the_window_reaches_the_range_requests(labelled):
    local = every_sample(shardkit.Dataset(labelled))
    sizes = [os.path.getsize(os.path.join(labelled, f)) for f in os.listdir(labelled)
             if f.endswith(".shard")]
    assert max(sizes) > 3 * 4096
    with Server(labelled) as server:
        ds = shardkit.Dataset(server.url, window=4096, window_cache=8 * 4096, connections=2,
                              retries=0, timeout=30)
        assert every_sample(ds) == local
        requests = server.shard_requests()
        ranges = [tuple(map(int, r[len("bytes="):].split("-"))) for _, r in requests
                  if not r.startswith("bytes=-")]
        # aligned windows of 4 KiB (the last of a file shorter), or a record
        # at least a window long read as one range of its own
        windows = [(a, b) for a, b in ranges if a % 4096 == 0 and b - a + 1 <= 4096]
        assert windows, requests
        assert all((a, b) in windows or b - a + 1 >= 4096 for a, b in ranges), requests
        assert all(r == "bytes=-4096" for _, r in requests if r.startswith("bytes=-"))
    # the defaults: 8 MiB windows, so the open's suffix (1 MiB) holds each shard whole
    with Server(labelled) as server:
        assert every_sample(shardkit.Dataset(server.url)) == local
        requests = server.shard_requests()
        assert sorted(r for _, r in requests) == ["bytes=-1048576"] * len(sizes), requests


def test_retries_reach_the_requests():
    with Server(status=503) as server:
        with pytest.raises(shardkit.NetworkError) as e:
            shardkit.Dataset(server.url + "/d", retries=2)
        assert "HTTP 503 Service Unavailable (gave up after 3 attempts)" in str(e.value)
        assert len(server.log) == 3
        server.log.clear()
        with pytest.raises(shardkit.NetworkError) as e:
            shardkit.Dataset(server.url + "/d", retries=0)
        assert "(gave up after 1 attempt)" in str(e.value) and len(server.log) == 1


def test_the_timeout_reaches_the_requests():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)  # accepts (in the kernel) and never answers
    try:
        start = time.monotonic()
        with pytest.raises(shardkit.NetworkError) as e:
            shardkit.Dataset(f"http://127.0.0.1:{listener.getsockname()[1]}/d", retries=0,
                             timeout=1)
        assert time.monotonic() - start < 8
        assert "timed out: nothing received for 1 s (gave up after 1 attempt)" in str(e.value)
    finally:
        listener.close()


def test_the_options_survive_pickling_and_show_in_repr(labelled):
    ds = shardkit.Dataset(labelled, connections=3, window=np.int64(65536), timeout=2.5)
    assert ds.options == {"connections": 3, "window": 65536, "timeout": 2.5}
    again = pickle.loads(pickle.dumps(ds))
    assert again.options == ds.options and len(again) == len(ds)
    assert "connections=3" in repr(ds) and "timeout=2.5" in repr(ds)
    assert shardkit.Dataset(labelled).options == {}


@pytest.mark.parametrize("name, value, error", [
    ("connections", 0, ValueError), ("connections", 65, ValueError),
    ("window", 4095, ValueError), ("window", 2**32 + 1, ValueError),
    ("window_cache", 4095, ValueError), ("retries", -1, ValueError), ("retries", 101, ValueError),
    ("timeout", 0, ValueError), ("timeout", -1.5, ValueError), ("timeout", 86401, ValueError),
    ("timeout", float("nan"), ValueError), ("timeout", "10", TypeError),
    ("timeout", True, TypeError), ("connections", 2.0, TypeError), ("retries", True, TypeError),
])
def test_a_bad_option_is_refused_naming_it(labelled, name, value, error):
    for make in (shardkit.Dataset, shardkit._native.Dataset):
        with pytest.raises(error, match=name):
            make(labelled, **{name: value})


def test_a_window_cache_smaller_than_the_window_is_refused(labelled):
    with pytest.raises(ValueError, match="window_cache must be at least the window"):
        shardkit.Dataset(labelled, window=65536, window_cache=65535)
    with pytest.raises(ValueError, match="window_cache must be at least the window"):
        shardkit.Dataset(labelled, window_cache=4096)  # the default window is 8 MiB
    shardkit.Dataset(labelled, window=4096, window_cache=4096)


def test_cache_is_the_deprecated_older_name_of_window_cache(labelled):
    with Server(labelled) as server:
        with pytest.warns(DeprecationWarning,
                          match=r"^cache= is deprecated: use window_cache= ") as caught:
            older = shardkit.Dataset(server.url, window=4096, cache=8 * 4096)
        # the warning points at the caller's line, not into the package
        assert [w.filename for w in caught] == [__file__]
        assert older.options == {"window": 4096, "window_cache": 8 * 4096}
        assert ", window_cache=32768," in repr(older) and ", cache=" not in repr(older)
        # checked as window_cache= is: smaller than the window is refused
        with pytest.warns(DeprecationWarning), pytest.raises(
                ValueError, match="window_cache must be at least the window"):
            shardkit.Dataset(server.url, window=8192, cache=4096)
        with pytest.raises(TypeError, match="cache is the deprecated older name of window_cache"):
            shardkit.Dataset(server.url, window_cache=8 * 4096, cache=8 * 4096)
        # a pickle made with the older key (0.1.0's options dict) reopens, warning
        with pytest.warns(DeprecationWarning, match="use window_cache="):
            again = shardkit.dataset._reopen(server.url, {"window": 4096, "cache": 8 * 4096})
        assert again.options == older.options
        assert every_sample(again) == every_sample(shardkit.Dataset(labelled))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new name does not warn
        shardkit.Dataset(labelled, window=4096, window_cache=8 * 4096)


def test_dataloader_workers_read_as_the_dataset_given(labelled):
    pytest.importorskip("torch")
    from torch.utils.data import DataLoader
    from shardkit.torch import ShardIterableDataset
    with Server(labelled) as server:
        ds = shardkit.Dataset(server.url, window=4096, window_cache=8 * 4096)
        data = ShardIterableDataset(ds, 8, shuffle=False, threads=1)
        assert data.reading == {"window": 4096, "window_cache": 8 * 4096}
        server.log.clear()
        seen = sum(len(labels) for _, labels in DataLoader(data, batch_size=None,
                                                           num_workers=1))
        assert seen == len(ds)
        # the worker process opened the dataset with 4 KiB windows too
        suffixes = {r for _, r in server.shard_requests() if r.startswith("bytes=-")}
        assert suffixes == {"bytes=-4096"}, suffixes


def test_the_node_cache_serves_a_second_read_without_a_request(labelled, tmp_path):
    local = every_sample(shardkit.Dataset(labelled))
    shards = len([f for f in os.listdir(labelled) if f.endswith(".shard")])
    cache = str(tmp_path / "cache")
    with Server(labelled) as server:
        first = shardkit.Dataset(server.url, cache_dir=cache)
        assert every_sample(first) == local
        assert len(server.shard_requests()) == shards
        st = first._native.stats()
        assert st["cache_misses"] == shards and st["cache_hits"] == 0, st
        del first  # its downloads end with it
        assert sorted(f for f in os.listdir(cache) if f.endswith(".shard")) == sorted(
            f"{s['xxh3']}-{s['bytes']}.shard" for s in shardkit.Dataset(labelled).manifest["shards"])
        server.log.clear()
        second = pickle.loads(pickle.dumps(shardkit.Dataset(server.url, cache_dir=cache)))
        assert second.options == {"cache_dir": cache}
        assert every_sample(second) == local
        assert server.shard_requests() == []
        st = second._native.stats()
        assert st["cache_hits"] == shards and st["cache_misses"] == 0, st
        assert st["cache_bytes_fetched"] == 0 and second.cache_warning == ""


def test_the_node_cache_is_taken_from_the_environment(labelled, tmp_path, monkeypatch):
    with Server(labelled) as server:
        monkeypatch.setenv("SHARDKIT_CACHE_DIR", str(tmp_path / "env"))
        every_sample(shardkit.Dataset(server.url))
        server.log.clear()
        every_sample(shardkit.Dataset(server.url))
        assert server.shard_requests() == []
        # an empty cache_dir turns it off
        every_sample(shardkit.Dataset(server.url, cache_dir=""))
        assert server.shard_requests()
        monkeypatch.setenv("SHARDKIT_CACHE_LIMIT", "much")
        with pytest.raises(ValueError, match="SHARDKIT_CACHE_LIMIT: 'much' is not a size"):
            shardkit.Dataset(server.url)


@pytest.mark.parametrize("name, value, error", [
    ("cache_limit", 0, ValueError), ("cache_limit", -1, ValueError),
    ("cache_limit", 1.5, TypeError), ("cache_dir", 5, TypeError),
])
def test_a_bad_cache_option_is_refused_naming_it(labelled, name, value, error):
    with pytest.raises(error, match=name):
        shardkit.Dataset(labelled, **{name: value})


def test_a_urls_password_shows_as_stars_in_reprs_and_errors(labelled):
    # as in the C tools' messages: the user information of a URL is ***
    with Server(labelled) as server:
        url = server.url.replace("http://", "http://user:s3cret@")
        ds = shardkit.Dataset(url)
        loader = shardkit.Loader(ds, 4, threads=0)
        shown = server.url.replace("http://", "http://***@")
        for text in (repr(ds), repr(loader)):
            assert "s3cret" not in text and f"Dataset('{shown}'" in text, text
        assert ds.location == url  # what it reads with (and workers reopen)
        for missing in (url + "/none", (url + "/none").encode()):
            with pytest.raises(shardkit.NotFoundError) as e:
                shardkit.Dataset(missing)
            want = shown + "/none"
            assert e.value.filename == (want if isinstance(missing, str) else want.encode())
            assert "s3cret" not in str(e.value) and "s3cret" not in repr(e.value.args)
    assert shardkit.Dataset(labelled).location == labelled  # nothing to redact: as given
    assert shardkit._native.redact_urls(b"s3://k:pw@b/p") == b"s3://***@b/p"
