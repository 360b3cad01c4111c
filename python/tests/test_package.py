"""The package as users get it: the README's PyTorch example runs as
written, and `pip install --no-build-isolation ./python` installs a working
package into a venv without the network."""
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import BIN, PYTHON, SAMPLE, TOP, sample_images, shardify, subprocess_env


def readme_example():
    with open(os.path.join(TOP, "README.md")) as f:
        text = f.read()
    section = text[text.index("## Python and PyTorch"):]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert blocks, "no python example in the README's Python section"
    return blocks[0]


@pytest.fixture(scope="module")
def class_folders(workdir):
    """48 sample images in four class folders, as 256-px shards."""
    dst = os.path.join(workdir, "classes")
    if not os.path.exists(os.path.join(dst, "manifest.json")):
        src = os.path.join(workdir, "classes-src")
        for k, name in enumerate(sample_images()[:48]):
            folder = os.path.join(src, f"class{k % 4}")
            os.makedirs(folder, exist_ok=True)
            shutil.copy(os.path.join(SAMPLE, name), folder)
        shardify(src, dst, "--size", "256")
    return dst


def test_the_readme_pytorch_example_runs_as_written(class_folders, tmp_path):
    pytest.importorskip("torch")
    code = readme_example()
    assert len(code.strip().splitlines()) <= 14
    os.symlink(class_folders, tmp_path / "shards")
    subprocess.run([PYTHON, "-c", code], cwd=tmp_path, env=subprocess_env(), check=True)


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
