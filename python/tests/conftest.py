"""Shared fixtures: datasets made with the real shardify from the photo
sample, once per test session, in a temporary directory.

The photo sample is 1000 photo-like JPEGs made by tests/fixtures/make_sample.py:
$SHARDKIT_SAMPLE (tests/run.sh generates it into BUILD/fixtures/sample), or,
run without tests/run.sh, made here into build/fixtures/sample on first use.
The package under test is the one on PYTHONPATH (tests/run.sh points it at
BUILD/python); the tools are $SHARDKIT_BIN (default: the checkout's
build/bin).

Every dataset a test leaves below pytest's temporary directory is held to
manifests/ (tests/check_schemas.py) when the test ends: a manifest or index
line the JSON Schemas or FORMAT.md do not describe fails that test.  A test
that damages a manifest on purpose says so with damaged(DIR)."""
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("SHARDKIT_BIN") or os.path.join(TOP, "build", "bin")
SAMPLE = os.environ.get("SHARDKIT_SAMPLE") or os.path.join(TOP, "build", "fixtures", "sample")
PYTHON = sys.executable


def tool(name):
    return os.path.join(BIN, name)


def shardify(src, dst, *options):
    subprocess.run([tool("shardify"), *options, "--quiet", src, dst], check=True)
    return dst


def doc_blocks(page, language):
    """The code blocks of one language in a page of the documentation
    (docs/...), in order: what a test runs as written."""
    with open(os.path.join(TOP, page)) as f:
        return re.findall(r"```" + language + r"\n(.*?)```", f.read(), re.S)


def sample_images():
    """The photo sample's JPEG names, sorted; the sample is made if missing."""
    if not os.path.isfile(os.path.join(SAMPLE, "SOURCE.txt")):
        subprocess.run([PYTHON, os.path.join(TOP, "tests", "fixtures", "make_sample.py"),
                        SAMPLE], check=True)
    return sorted(f for f in os.listdir(SAMPLE) if f.endswith(".JPEG"))


def subprocess_env(**extra):
    """The environment for a child Python that must import this package."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p and os.path.isdir(p))
    env.update(extra)
    return env


@pytest.fixture(scope="session")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("shardkit")


@pytest.fixture(scope="session")
def photos():
    """The photo sample's directory: 1000 JPEGs (and a SOURCE.txt)."""
    sample_images()
    return SAMPLE


def _made(workdir, name, *options, src=None):
    dst = os.path.join(workdir, name)
    if not os.path.exists(os.path.join(dst, "manifest.json")):
        shardify(src or SAMPLE, dst, *options)
    return dst


@pytest.fixture(scope="session")
def jpeg256(workdir, photos):
    """The 1000 images as 256-px JPEG records, in four shards."""
    return _made(workdir, "jpeg256", "--size", "256", "--codec", "jpeg", "--shard-size", "8M")


@pytest.fixture(scope="session")
def png128(workdir, photos):
    return _made(workdir, "png128", "--size", "128", "--codec", "png", "--shard-size", "8M")


@pytest.fixture(scope="session")
def raw128(workdir, photos):
    return _made(workdir, "raw128", "--size", "128", "--codec", "raw", "--shard-size", "16M")


@pytest.fixture(scope="session")
def by_codec(jpeg256, png128, raw128):
    return {"jpeg": jpeg256, "png": png128, "raw": raw128}


@pytest.fixture(scope="session")
def labelled(workdir, photos):
    """A small labelled dataset: 60 sample images in three class folders
    (plus two at the top, without a label), 64-px JPEG, six shards."""
    src = os.path.join(workdir, "labelled-src")
    if not os.path.isdir(src):
        images = sample_images()
        for k, name in enumerate(images[:62]):
            folder = ("ant", "bee", "cat")[k % 3] if k < 60 else ""
            os.makedirs(os.path.join(src, folder), exist_ok=True)
            shutil.copy(os.path.join(SAMPLE, name), os.path.join(src, folder, name))
    return _made(workdir, "labelled", "--size", "64", "--shard-size", "40K", src=src)


def index_lines(dst):
    with open(os.path.join(dst, "index.jsonl")) as f:
        return [json.loads(line) for line in f]


def _load_schema_check():
    spec = importlib.util.spec_from_file_location(
        "check_schemas", os.path.join(TOP, "tests", "check_schemas.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_schema_check = _load_schema_check()
_validators = _schema_check.validators()
_checked = {}  # manifest path -> (mtime, size) when last checked
_damaged = set()


def damaged(directory):
    """The dataset in `directory` was damaged on purpose (its manifest made
    to disagree with manifests/, for the reader to refuse): not checked."""
    _damaged.add(os.path.realpath(os.path.join(directory, "manifest.json")))


@pytest.fixture(autouse=True)
def _datasets_agree_with_the_schemas(tmp_path_factory):
    """After each test: every manifest.json below the session's temporary
    directory that is new or changed since the last test, with its index."""
    yield
    problems = []
    for path in _schema_check.manifests(str(tmp_path_factory.getbasetemp())):
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if os.path.realpath(path) in _damaged or _checked.get(path) == (st.st_mtime_ns, st.st_size):
            continue
        _checked[path] = (st.st_mtime_ns, st.st_size)
        problems += _schema_check.check_manifest(path, *_validators)
    if problems:
        pytest.fail("a dataset this test wrote disagrees with manifests/:\n" + "\n".join(problems),
                    pytrace=False)
