"""The package's type information (PEP 561): py.typed, the inline
annotations of the Python modules and the stub of the extension
(shardkit/_native.pyi).

- mypy's stubtest holds the stub to the built extension: every name in one is
  in the other, with the same arguments (their names and kinds, from the
  text signatures in the extension's docstrings).
- mypy --strict passes over the package, at the oldest Python it supports
  (requires-python: mypy knows which standard library names each version has).
- a typed program using the public API passes mypy --strict and runs on a real
  dataset; a program misusing it gets an error on each marked line.

Debian's python3-mypy (scripts/deps.sh, group test); the package is the one
on the path (tests/run.sh: BUILD/python)."""
import ast
import inspect
import os
import re
import subprocess
import sys

import pytest

import shardkit
from conftest import PYTHON, TOP, subprocess_env
from test_minimum_python import minimum

pytest.importorskip("mypy", reason="mypy (Debian: python3-mypy) checks the types")

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "typing")
# The directory holding the package under test (BUILD/python, or site-packages).
PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(shardkit.__file__)))
CONFIG = os.path.join(TOP, "python", "pyproject.toml")


def mypy_cache():
    return os.path.join(os.environ.get("SHARDKIT_BUILD") or os.path.join(TOP, "build"),
                        "mypy-cache")


def run_mypy(*args, cwd):
    """mypy over ARGS with the package's configuration, at the minimum Python,
    finding shardkit where the tests import it from: (exit status, output)."""
    floor = ".".join(map(str, minimum()))
    env = subprocess_env(MYPYPATH=PACKAGE_ROOT)
    r = subprocess.run([sys.executable, "-m", "mypy", "--config-file", CONFIG,
                        "--python-version", floor, "--cache-dir", mypy_cache(),
                        "--no-error-summary", *args],
                       cwd=cwd, env=env, capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def test_the_package_says_it_is_typed():
    package = os.path.dirname(shardkit.__file__)
    assert os.path.isfile(os.path.join(package, "py.typed"))
    assert os.path.isfile(os.path.join(package, "_native.pyi"))


def test_the_stub_matches_the_extension(tmp_path):
    env = subprocess_env(MYPYPATH=PACKAGE_ROOT)
    r = subprocess.run([sys.executable, "-m", "mypy.stubtest", "shardkit._native"],
                       cwd=tmp_path, env=env, capture_output=True, text=True)
    assert r.returncode == 0 and "Success" in r.stdout, r.stdout + r.stderr


def test_the_extension_tells_its_signatures():
    # what stubtest compares the stub with: the text signatures
    from shardkit import _native
    assert str(inspect.signature(_native.Dataset.read)) == "(self, index, /)"
    assert list(inspect.signature(_native.Loader).parameters) == [
        "dataset", "transforms", "options"]
    assert str(inspect.signature(_native.Transforms)) == "(steps, layout='NHWC', dtype='uint8')"
    assert str(inspect.signature(_native.Dataset)) == (
        "(location, *, connections=None, window=None, window_cache=None, retries=None, "
        "timeout=None, cache_dir=None, cache_limit=None)")


def stub_constructors():
    """{class name: [(parameter, kind, has a default)]} of every __init__ in
    the extension's stub, self left out."""
    with open(os.path.join(os.path.dirname(shardkit.__file__), "_native.pyi")) as f:
        tree = ast.parse(f.read())
    found = {}
    for cls in tree.body:
        for fn in cls.body if isinstance(cls, ast.ClassDef) else []:
            if isinstance(fn, ast.FunctionDef) and fn.name == "__init__":
                a = fn.args
                positional = a.posonlyargs + a.args
                defaults = [False] * (len(positional) - len(a.defaults)) + [True] * len(a.defaults)
                kinds = (["POSITIONAL_ONLY"] * len(a.posonlyargs) +
                         ["POSITIONAL_OR_KEYWORD"] * len(a.args))
                params = [(p.arg, k, d) for p, k, d in zip(positional, kinds, defaults)]
                params += [(p.arg, "KEYWORD_ONLY", d is not None)
                           for p, d in zip(a.kwonlyargs, a.kw_defaults)]
                found[cls.name] = params[1:]
    return found


def test_the_stub_constructors_match_the_extension():
    # stubtest compares a C type's methods, not its constructor (the runtime
    # __init__ is object's): the stub's __init__ against the type's signature
    from shardkit import _native
    stubs = stub_constructors()
    assert {"Dataset", "Transforms", "Loader"} <= set(stubs)
    for name, params in stubs.items():
        runtime = [(p.name, p.kind.name, p.default is not p.empty)
                   for p in inspect.signature(getattr(_native, name)).parameters.values()]
        assert params == runtime, name


def test_the_package_passes_mypy_strict(tmp_path):
    status, out = run_mypy("-p", "shardkit", cwd=tmp_path)
    assert status == 0, out


def test_a_typed_program_using_the_api_passes_and_runs(tmp_path, labelled):
    program = os.path.join(EXAMPLES, "uses_api.py")
    status, out = run_mypy(program, cwd=tmp_path)
    assert status == 0, out
    torch = "torch" if _has_torch() else "numpy"
    r = subprocess.run([PYTHON, program, labelled, torch], cwd=tmp_path, env=subprocess_env(),
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[1].startswith("62 samples, 3 classes, identity ")
    assert f"{shardkit.__version__}" in lines
    assert "8 batches" in lines  # 62 samples in batches of 8
    assert any(line.endswith("-not-there: -11") for line in lines)
    assert "62 samples, 4 connections, timeout 2.5" in lines
    if torch == "torch":
        assert lines[-1] == "4 torch batches"


def _has_torch():
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def expected_errors(path):
    """{line number: the text its "# error:" comment expects}."""
    with open(path) as f:
        return {n: m.group(1).strip() for n, line in enumerate(f, 1)
                if (m := re.search(r"# error: (.*)$", line))}


def test_a_program_misusing_the_api_gets_an_error_on_each_marked_line(tmp_path):
    program = os.path.join(EXAMPLES, "misuses_api.py")
    expected = expected_errors(program)
    assert len(expected) >= 10
    status, out = run_mypy(program, cwd=tmp_path)
    assert status == 1, out
    found = {}
    for line in out.splitlines():
        m = re.match(r".*misuses_api\.py:(\d+): error: (.*)$", line)
        if m:
            found.setdefault(int(m.group(1)), []).append(m.group(2))
    assert sorted(found) == sorted(expected), out
    for n, text in expected.items():
        assert any(text.lower() in e.lower() for e in found[n]), (n, text, found[n])
