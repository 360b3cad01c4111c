"""python3 -m shardkit.probe: the numbers it derives from timings, its
verdict, its trace, how it shows a flat folder to ImageFolder, its errors,
and short real runs over a flat folder (as the photo sample is)."""
import json
import os
import shutil
import subprocess

import pytest

from conftest import PYTHON, sample_images, shardify, subprocess_env
from shardkit import probe


def steady(step_ms, wait_ms):
    return {"steady": {"step_ms": step_ms, "wait_ms": wait_ms,
                       "wait_share": wait_ms / step_ms}}


def test_summary_separates_startup_warmup_and_steady_steps():
    # (wait start, wait end, step end) in seconds; batch 10
    spans = [(0.0, 2.0, 2.1),              # startup 2 s
             (2.1, 2.4, 2.6),              # warm-up: 0.5 s step, 0.3 s waiting
             (2.6, 2.7, 3.0), (3.0, 3.1, 3.4)]  # steady: 0.4 s steps, 0.1 s waiting
    r = probe.summarise(spans, 1, 10)
    assert r["startup_s"] == pytest.approx(2.0)
    assert r["warmup"]["steps"] == 1
    assert r["warmup"]["step_ms"] == pytest.approx(500)
    assert r["warmup"]["wait_share"] == pytest.approx(0.6)
    assert r["steady"]["steps"] == 2
    assert r["steady"]["step_ms"] == pytest.approx(400)
    assert r["steady"]["wait_ms"] == pytest.approx(100)
    assert r["steady"]["wait_share"] == pytest.approx(0.25)
    assert r["steady"]["images_per_second"] == pytest.approx(25)


def test_summary_without_warmup_steps():
    r = probe.summarise([(0, 1, 2), (2, 2.5, 3)], 0, 4)
    assert r["warmup"] is None
    assert r["steady"]["steps"] == 1 and r["steady"]["wait_share"] == pytest.approx(0.5)


def test_input_bound_verdict_says_how_much_the_shards_cut_the_wait():
    ways = {"resident": steady(100, 0), "imagefolder": steady(400, 300),
            "shards": steady(105, 5)}
    bound, sentence = probe.verdict(ways)
    assert bound
    assert sentence.startswith("input-bound:")
    assert "400 ms against 100 ms" in sentence
    assert "cut the wait 60.0x" in sentence and "3.8x" in sentence
    assert "sharing the cores" not in sentence  # 105 ms is within 10% of 100 ms


def test_input_bound_verdict_names_the_cores_the_loader_takes():
    ways = {"resident": steady(100, 0), "imagefolder": steady(400, 300),
            "shards": steady(200, 10)}
    bound, sentence = probe.verdict(ways)
    assert bound and "sharing the cores with the model" in sentence


def test_a_wait_free_shard_step_cuts_the_wait_to_nothing():
    ways = {"resident": steady(100, 0), "imagefolder": steady(300, 200),
            "shards": steady(100, 0)}
    assert "cut the wait to nothing" in probe.verdict(ways)[1]


def test_compute_bound_verdict_when_the_folder_loader_keeps_up():
    ways = {"resident": steady(1000, 0), "imagefolder": steady(1050, 20),
            "shards": steady(1010, 1)}
    bound, sentence = probe.verdict(ways)
    assert not bound
    assert sentence.startswith("compute-bound:") and "not the limit" in sentence


def test_the_threshold_decides():
    ways = {"resident": steady(100, 0), "imagefolder": steady(130, 25),
            "shards": steady(100, 0)}
    assert probe.verdict(ways, threshold=0.5)[0] is False
    assert probe.verdict(ways, threshold=0.2)[0] is True


def test_trace_has_a_track_per_run_with_startup_wait_and_step_spans():
    runs = [("one resident batch", "resident", [(10.0, 10.5, 11.0), (11.0, 11.0, 11.25)]),
            ("shardkit.Loader", "shards", [(12.0, 12.5, 13.0)])]
    events = probe.chrome_trace(runs, 10.0)["traceEvents"]
    spans = [e for e in events if e["ph"] == "X"]
    assert [(e["tid"], e["name"], e["cat"], e["ts"], e["dur"]) for e in spans] == [
        (1, "startup", "resident", 0, 500000), (1, "model-step", "resident", 500000, 500000),
        (1, "data-wait", "resident", 1000000, 0), (1, "model-step", "resident", 1000000, 250000),
        (2, "startup", "shards", 2000000, 500000), (2, "model-step", "shards", 2500000, 500000)]
    names = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert names == {1: "one resident batch", 2: "shardkit.Loader"}


def test_rounds_report_the_median_of_each_number():
    rounds = [probe.summarise(spans, 1, 10) for spans in (
        [(0, 1, 2), (2, 2, 3), (3, 3.1, 3.5)],
        [(0, 3, 4), (4, 4, 5), (5, 5.1, 5.3)],
        [(0, 2, 3), (3, 3, 4), (4, 4.2, 4.6)])]
    merged = probe.median_summary(rounds)
    assert merged["startup_s"] == 2
    assert merged["steady"]["step_ms"] == pytest.approx(500)  # of 500, 300, 600
    assert merged["steady"]["wait_ms"] == pytest.approx(100)
    assert probe.median_summary([probe.summarise([(0, 1, 2), (2, 2, 3)], 0, 1)])["warmup"] is None


def test_a_flat_folder_is_shown_to_imagefolder_as_one_class(tmp_path):
    torchvision = pytest.importorskip("torchvision")
    from PIL import Image
    src = tmp_path / "flat"
    src.mkdir()
    for k in range(3):
        Image.new("RGB", (8, 8), (k, 0, 0)).save(src / f"{k}.jpg")
    (src / "notes.txt").write_text("not an image")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    root, layout = probe.image_folder_root(str(src), str(scratch))
    assert layout == "flat" and root.startswith(str(scratch))
    folder = torchvision.datasets.ImageFolder(root)
    assert folder.classes == [probe.FLAT_CLASS]
    assert sorted(os.path.basename(p) for p, _ in folder.samples) == ["0.jpg", "1.jpg", "2.jpg"]
    assert sorted(os.listdir(src)) == ["0.jpg", "1.jpg", "2.jpg", "notes.txt"]  # untouched


def test_a_folder_with_class_folders_is_used_as_it_is(tmp_path):
    (tmp_path / "cat").mkdir()
    assert probe.image_folder_root(str(tmp_path), str(tmp_path / "x")) == (
        str(tmp_path), "class folders")


def run_probe(*args):
    return subprocess.run([PYTHON, "-m", "shardkit.probe", *args], capture_output=True,
                          text=True, env=subprocess_env(), timeout=300)


def test_missing_src_and_dst_are_clear_errors(labelled, tmp_path):
    src = os.path.join(os.path.dirname(labelled), "labelled-src")
    r = run_probe(str(tmp_path / "nothere"), labelled)
    assert r.returncode == 1
    assert r.stderr == f"probe: no such directory '{tmp_path / 'nothere'}'\n"
    r = run_probe(src, str(tmp_path / "noshards"))
    assert r.returncode == 1
    assert r.stderr.startswith(f"probe: no dataset at '{tmp_path / 'noshards'}'")
    empty = tmp_path / "empty"
    empty.mkdir()
    r = run_probe(str(empty), labelled)
    assert r.returncode == 1 and "no images and no class folders" in r.stderr
    r = run_probe(src, labelled, "--trace", str(tmp_path / "no" / "dir" / "t.json"))
    assert r.returncode == 1
    assert r.stderr == f"probe: cannot write '{tmp_path / 'no' / 'dir' / 't.json'}': " \
        "no writable directory\n"
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "manifest.json").write_text("{")
    r = run_probe(src, str(tmp_path / "bad"))
    assert r.returncode == 1 and r.stderr.startswith(f"probe: cannot open '{tmp_path / 'bad'}'")


def test_usage_errors_exit_2():
    r = run_probe("a", "b", "--steps", "3", "--warmup", "2")
    assert r.returncode == 2 and "leaves no steady step" in r.stderr
    r = run_probe("a", "b", "--batch-size", "0")
    assert r.returncode == 2 and "--batch-size" in r.stderr
    r = run_probe("--help")
    assert r.returncode == 0 and "--trace FILE" in r.stdout and "--json" in r.stdout


@pytest.fixture(scope="module")
def flat(workdir, photos):
    """(SRC, DST): 40 sample images with no class folder, as the photo
    sample is, and their 64-px shards."""
    src = os.path.join(workdir, "flat-src")
    dst = os.path.join(workdir, "flat")
    if not os.path.isdir(src):
        os.makedirs(src)
        for name in sample_images()[:40]:
            shutil.copy(os.path.join(photos, name), src)
    if not os.path.exists(os.path.join(dst, "manifest.json")):
        shardify(src, dst, "--size", "64")
    return src, dst


def test_a_short_real_run_over_a_flat_folder_reports_the_three_ways(flat, tmp_path):
    pytest.importorskip("torchvision")
    src, dst = flat
    trace = tmp_path / "trace.json"
    r = run_probe(src, dst, "--steps", "4", "--warmup", "1", "--batch-size", "8",
                  "--workers", "1", "--threads", "1", "--rounds", "2", "--json",
                  "--trace", str(trace))
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["src_layout"] == "flat"
    assert f"'{src}' has no class folders" in report["note"]
    assert sorted(os.listdir(src)) == sorted(sample_images()[:40])  # SRC untouched
    assert report["settings"]["rounds"] == 2
    assert set(report["ways"]) == {"resident", "imagefolder", "shards"}
    for way in report["ways"].values():
        assert way["startup_s"] > 0
        assert way["warmup"]["steps"] == 1 and way["steady"]["steps"] == 2
        assert 0 <= way["steady"]["wait_share"] < 1
        assert way["steady"]["images_per_second"] > 0
    assert report["ways"]["resident"]["steady"]["vs_resident"] == 1
    assert report["input_bound"] == probe.verdict(report["ways"])[0]
    assert report["verdict"].startswith(("input-bound:", "compute-bound:"))
    spans = [e for e in json.loads(trace.read_text())["traceEvents"] if e["ph"] == "X"]
    assert len(spans) == 2 * 3 * 4 * 2  # rounds x ways x steps x (wait, step)
    assert {e["name"] for e in spans} == {"startup", "data-wait", "model-step"}
    # without --json: the table, the note and the verdict
    r = run_probe(src, dst, "--steps", "3", "--warmup", "0", "--batch-size", "8",
                  "--workers", "0", "--threads", "1")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[1].startswith("note: ")
    for title in probe.WAY_TITLES.values():
        assert sum(line.startswith(title) for line in lines) == 1
    assert lines[-1].startswith(("input-bound:", "compute-bound:"))
