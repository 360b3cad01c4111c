"""The package as users get it: `pip install --no-build-isolation ./python` installs a working
package into a venv without the network, and so does its source
distribution, unpacked where no checkout is beside it."""
import glob
import importlib.util
import os
import subprocess
import sys
import tarfile

import pytest

import shardkit
from conftest import BIN, TOP
from test_minimum_python import minimum


@pytest.mark.skipif("libasan" in os.environ.get("LD_PRELOAD", ""),
                    reason="pip builds an uninstrumented extension; the sanitizer run "
                           "covers the one make builds")
def test_pip_installs_the_package_into_a_venv_offline(tmp_path, labelled):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
                   check=True)
    python = str(venv / "bin" / "python")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    # No index, no network: everything needed is on the machine.  The library
    # is the one this run tests (made with make, so only the extension builds).
    env.update(PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1",
               SHARDKIT_BUILD=os.path.dirname(BIN))
    subprocess.run([python, "-m", "pip", "install", "-q", "--no-build-isolation",
                    os.path.join(TOP, "python")], env=env, check=True, cwd=tmp_path)
    out = subprocess.run(
        [python, "-c", "import shardkit, sys; ds = shardkit.Dataset(sys.argv[1]); "
                       "print(shardkit.__file__, len(ds), ds[0].image.shape[2])", labelled],
        env=env, check=True, capture_output=True, text=True, cwd=tmp_path).stdout.split()
    assert out[0].startswith(str(venv)) and out[1:] == ["62", "3"]


def pkg_config_without(folder, left_out):
    """A pkg-config search folder holding the machine's .pc files but those
    whose names start with one of left_out (PKG_CONFIG_LIBDIR=folder)."""
    os.makedirs(folder)
    search = subprocess.run(["pkg-config", "--variable", "pc_path", "pkg-config"], check=True,
                            capture_output=True, text=True).stdout.strip()
    for d in search.split(":"):
        for pc in sorted(glob.glob(os.path.join(d, "*.pc"))):
            name = os.path.basename(pc)
            if not name.startswith(left_out) and not os.path.exists(os.path.join(folder, name)):
                os.symlink(pc, os.path.join(folder, name))
    return folder


def offline_env(**extra):
    """An environment that sees neither this checkout's package nor its build."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME") and not k.startswith("SHARDKIT_")}
    env.update(PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", **extra)
    return env


@pytest.mark.skipif("libasan" in os.environ.get("LD_PRELOAD", ""),
                    reason="pip builds an uninstrumented extension; the sanitizer run "
                           "covers the one make builds")
def test_the_sdist_builds_and_installs_away_from_the_checkout(tmp_path, labelled):
    pytest.importorskip("build", reason="python3-build makes the sdist (PEP 517)")
    # the source distribution, made by the PEP 517 front end
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir",
                    str(dist), os.path.join(TOP, "python")], env=offline_env(), check=True,
                   capture_output=True, cwd=tmp_path)
    name = f"shardkit-{shardkit.__version__}"
    assert os.listdir(dist) == [f"{name}.tar.gz"]
    with tarfile.open(dist / f"{name}.tar.gz") as tar:
        members = set(tar.getnames())
        pkg_info = tar.extractfile(f"{name}/PKG-INFO").read().decode()
        # unpacked in a folder of its own, with no checkout above or beside it
        tar.extractall(tmp_path / "unpacked")
    for path in ("csrc/Makefile", "csrc/include/shardkit.h", "csrc/lib/read/dataset.c",
                 "src/native.h", "shardkit/py.typed", "shardkit/_native.pyi", "LICENSE"):
        assert f"{name}/{path}" in members, path
    floor = ".".join(map(str, minimum()))
    assert f"Requires-Python: >={floor}" in pkg_info.splitlines()
    source = tmp_path / "unpacked" / name

    # pip builds and installs it into a venv, offline; pkg-config does not
    # find libvips nor libarchive: the reader needs neither
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
                   check=True)
    python = str(venv / "bin" / "python")
    env = offline_env(PKG_CONFIG_LIBDIR=pkg_config_without(str(tmp_path / "pc"),
                                                           ("vips", "libarchive")))
    subprocess.run([python, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps",
                    "--no-cache-dir", str(source)], env=env, check=True, cwd=tmp_path)

    # it imports and reads, from a folder with nothing in it
    away = tmp_path / "away"
    away.mkdir()
    out = subprocess.run(
        [python, "-c", "import shardkit, sys; ds = shardkit.Dataset(sys.argv[1]); "
                       "print(shardkit.__file__); print(len(ds), ds[0].image.shape[2], *ds.labels)",
         labelled], env=env, check=True, capture_output=True, text=True, cwd=away).stdout
    installed, read = out.splitlines()
    assert installed.startswith(str(venv))
    assert read == "62 3 ant bee cat"
    # the extension was built from the sdist's sources, not from this checkout
    package = os.path.dirname(installed)
    (extension,) = glob.glob(os.path.join(package, "_native*.so"))
    with open(extension, "rb") as f:
        assert os.path.abspath(TOP).encode() not in f.read()
    # and the types came along (PEP 561): mypy, run for the venv's Python,
    # finds them in its site-packages
    assert os.path.isfile(os.path.join(package, "py.typed"))
    if importlib.util.find_spec("mypy"):
        checked = subprocess.run(
            [sys.executable, "-m", "mypy", "--strict", "--python-executable", python,
             "--cache-dir", str(tmp_path / "mypy-cache"), "--no-error-summary",
             os.path.join(TOP, "python", "tests", "typing", "misuses_api.py")],
            env=offline_env(), capture_output=True, text=True, cwd=away).stdout
        assert 'Argument 1 to "Dataset" has incompatible type "int"' in checked, checked
        assert "missing library stubs or py.typed" not in checked, checked
