"""The extension's objects stay valid while C uses them: close() from another
thread or from a signal handler while next() waits or works, a second
__init__, a step name that cannot be UTF-8.  Each of these once freed memory
in use or crashed, so each runs in a child process (a crash fails the test,
not the session); `make sanitize` runs them under ASan, which the children
inherit."""
import json
import os
import subprocess
import textwrap

import pytest

import shardkit
from shardkit import _native
from conftest import PYTHON, subprocess_env

# A batch that takes seconds: 32 resampling steps per sample (the output is
# small, so the batch's memory is), 256 samples.
SLOW = """
import json, os, signal, sys, threading, time
import shardkit
SLOW = [shardkit.Resize(1024), shardkit.Resize(64)] * 16
def tasks():
    return len(os.listdir("/proc/self/task"))
def slow_loader(threads):
    return shardkit.Loader(sys.argv[1], 256, threads=threads, prefetch=1, transform=SLOW)
def outcome(call):
    start = time.monotonic()
    try:
        got = call()
        result = {"returned": type(got).__name__}
    except BaseException as e:
        result = {"raised": type(e).__name__, "message": str(e)}
    result["seconds"] = time.monotonic() - start
    return result
"""


def child(body, *args, timeout=1200):  # valgrind makes a slow batch minutes long
    code = SLOW + textwrap.dedent(body)
    done = subprocess.run([PYTHON, "-c", code, *args], env=subprocess_env(), timeout=timeout,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize("threads", [2, 0])
def test_close_from_another_thread_during_next_ends_it_as_closed(jpeg256, threads):
    # threads=2: next() waits for the workers; 0: it makes the batch itself
    got = child("""
        before = tasks()
        loader = slow_loader(int(sys.argv[2]))
        it = iter(loader)
        closer = threading.Timer(0.2, loader.close)
        closer.start()
        result = outcome(lambda: next(it))
        closer.join()
        result["after"] = outcome(lambda: next(it))
        result["lingering_threads"] = tasks() - before
        print(json.dumps(result))
    """, jpeg256, str(threads))
    assert got["raised"] == "ValueError" and got["message"] == "the loader is closed", got
    # the iteration does not end as if the epoch were over: it stays closed
    assert got["after"]["raised"] == "ValueError", got
    assert got["after"]["message"] == "the loader is closed", got
    assert got["lingering_threads"] == 0, got


def test_close_from_a_signal_handler_during_next_ends_it_as_closed(jpeg256):
    got = child("""
        before = tasks()
        loader = slow_loader(2)
        it = iter(loader)
        signal.signal(signal.SIGALRM, lambda *_: loader.close())
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        result = outcome(lambda: next(it))
        result["lingering_threads"] = tasks() - before
        result["iter_again"] = outcome(lambda: next(iter(loader)))
        print(json.dumps(result))
    """, jpeg256)
    assert got["raised"] == "ValueError" and got["message"] == "the loader is closed", got
    assert got["lingering_threads"] == 0, got
    assert got["iter_again"]["message"] == "the loader is closed", got


def test_sigint_during_next_keeps_the_loader_usable(jpeg256):
    # the handler raises instead of closing: next() ends with it, the loader
    # stays where it was and goes on
    got = child("""
        loader = shardkit.Loader(sys.argv[1], 4, threads=1, prefetch=1,
                                 transform=[shardkit.CenterCrop(32)])
        slow = slow_loader(1)
        it = iter(slow)
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        signal.signal(signal.SIGALRM, signal.default_int_handler)
        result = outcome(lambda: next(it))
        result["other"] = len(next(iter(loader)))
        slow.close()
        print(json.dumps(result))
    """, jpeg256)
    assert got["raised"] == "KeyboardInterrupt" and got["other"] == 4, got


def test_next_after_close_says_the_loader_is_closed(labelled):
    loader = shardkit.Loader(labelled, 4, threads=1)
    it = iter(loader)
    next(it)
    loader.close()
    with pytest.raises(ValueError, match="^the loader is closed$"):
        next(it)
    with pytest.raises(ValueError, match="^the loader is closed$"):
        next(iter(loader))
    loader.close()  # twice is fine


def test_a_second_init_is_refused_and_the_running_loader_keeps_its_transform(labelled):
    got = child("""
        from shardkit import _native
        ds = shardkit.Dataset(sys.argv[1])
        transforms = _native.Transforms([("resize", 256, 0)], "NHWC", "uint8")
        options = {"batch_size": 8, "shuffle": True, "seed": 0, "rank": 0, "world_size": 1,
                   "threads": 1, "drop_last": False, "remainder": "keep", "shuffle_buffer": 16,
                   "prefetch": 1, "skip_errors": False}
        loader = _native.Loader(ds._native, transforms, options)
        loader.start(0, 0)
        first = loader.next()
        result = {"transforms": outcome(lambda: transforms.__init__([("center_crop", 8, 8)])),
                  "loader": outcome(lambda: loader.__init__(ds._native, None, options)),
                  "dataset": outcome(lambda: ds._native.__init__(sys.argv[1])),
                  "shapes": []}
        while True:
            parts = loader.next()
            if parts is None:
                break
            result["shapes"].extend(min(memoryview(a).shape[:2]) for a in parts[0])
        print(json.dumps(result))
    """, labelled)
    for what in ("transforms", "loader", "dataset"):
        assert got[what]["raised"] == "RuntimeError", got
        assert "already" in got[what]["message"], got
    assert got["shapes"] and set(got["shapes"]) == {256}, got  # still the first transform


def test_a_loader_refuses_transforms_that_were_never_initialised(labelled):
    ds = shardkit.Dataset(labelled)
    with pytest.raises(TypeError, match="initialised Transforms"):
        _native.Loader(ds._native, _native.Transforms.__new__(_native.Transforms),
                       {"batch_size": 8})


def test_a_step_name_that_cannot_be_utf8_is_an_error_not_a_crash():
    got = child("""
        from shardkit import _native
        print(json.dumps({"lone": outcome(lambda: _native.Transforms([("\\udc80",)])),
                          "unknown": outcome(lambda: _native.Transforms([("crop\\udc80", 1)]))}))
    """)
    assert got["lone"]["raised"] == "UnicodeEncodeError", got
    assert got["unknown"]["raised"] == "UnicodeEncodeError", got
    with pytest.raises(ValueError, match="unknown transform step 'crop'"):
        _native.Transforms([("crop", 1)])


def test_loader_calls_from_two_threads_at_once_are_refused_not_raced(jpeg256):
    got = child("""
        loader = slow_loader(1)
        it = iter(loader)
        seen = {}
        def other():
            time.sleep(0.2)
            seen["set_epoch"] = outcome(lambda: loader.set_epoch(3))
            seen["next"] = outcome(loader._native.next)
            loader.close()
        t = threading.Thread(target=other)
        t.start()
        seen["main"] = outcome(lambda: next(it))
        t.join()
        print(json.dumps(seen))
    """, jpeg256)
    for what in ("set_epoch", "next"):
        assert got[what]["raised"] == "RuntimeError", got
        assert "in use by another call" in got[what]["message"], got
    assert got["main"]["message"] == "the loader is closed", got
