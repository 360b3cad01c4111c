"""python3 -m shardkit.probe: the numbers it derives from timings, its
verdict, its trace, how it shows a flat folder to ImageFolder, its errors,
and short real runs over a flat folder (as the photo sample is)."""
import json
import os
import re
import shutil
import subprocess
import time

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


def capacity_ways(resident_ms, folder_cpu_ms, shards_cpu_ms):
    return {"resident": steady(resident_ms, 0),
            "imagefolder": {"steady": {"step_ms": 400, "input_cpu_ms_per_sample": folder_cpu_ms}},
            "shards": {"steady": {"step_ms": 110, "input_cpu_ms_per_sample": shards_cpu_ms}}}


def test_capacity_is_cpu_per_image_times_batch_over_the_step():
    # 20 ms of CPU per image, 32 images a step: 640 ms of CPU per step; a
    # 100 ms step needs 6.4 cores of it, a 40 ms step 16
    c = probe.capacity(capacity_ways(100, 20, 2.5), 32, step_ms=40, cpus=2)
    assert c["cores"] == {"imagefolder": {"measured": pytest.approx(6.4), "given": pytest.approx(16)},
                          "shards": {"measured": pytest.approx(0.8), "given": pytest.approx(2)}}
    assert c["step_ms"] == {"measured": 100, "given": 40}
    assert c["sentence"] == (
        "capacity: per image, ImageFolder + DataLoader spends 20.0 ms of CPU and "
        "shardkit.Loader 2.5 ms; to keep one accelerator busy at the measured 100 ms step "
        "(batch 32, resident input) they need 6.4 and 0.8 host cores, at a 40 ms step "
        "(--step-ms) 16.0 and 2.0; this process may use 2.")
    c = probe.capacity(capacity_ways(100, 20, 2.5), 32)
    assert c["cores"]["shards"]["given"] is None and "--step-ms" not in c["sentence"]


def test_capacity_without_cpu_times_says_so():
    c = probe.capacity(capacity_ways(100, None, 2.5), 32, step_ms=40)
    assert c["cores"]["shards"] == {"measured": None, "given": None}
    assert c["sentence"].startswith("capacity: unknown")


def burn(seconds):
    """Spend `seconds` of this thread's CPU time."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


class BurningImages:
    """A dataset whose every sample costs COST seconds of CPU: the input
    path of known cost."""
    COST = 0.008

    def __len__(self):
        return 1000

    def __getitem__(self, i):
        import torch
        burn(self.COST)
        return torch.zeros(3, 8, 8), 0


def thread_batches(cost, batch_size, per_epoch=3):
    """Batches made by threads of this process that spend `cost` seconds of
    CPU per sample, a new thread each epoch of `per_epoch` batches (as
    shardkit.Loader's threads do): the CPU time of ended threads counts too."""
    import queue
    import threading

    import torch
    out = queue.Queue()

    def epoch():
        for _ in range(per_epoch):
            for _ in range(batch_size):
                burn(cost)
            out.put((torch.zeros(batch_size, 3, 8, 8), torch.zeros(batch_size)))

    while True:
        worker = threading.Thread(target=epoch, daemon=True)
        worker.start()
        for _ in range(per_epoch):
            yield out.get()
        worker.join()


def test_capacity_of_input_paths_whose_cpu_cost_is_known():
    torch = pytest.importorskip("torch")
    batch, steps, warmup, step_s = 4, 12, 2, 0.06
    # the model's step: 60 ms of sleep (the accelerator's time; no host CPU)
    model_step = lambda images, labels: time.sleep(step_s)  # noqa: E731
    ways = {}
    _, spans, cpu = probe.time_steps(lambda: probe.resident_batches((torch.zeros(1), None)),
                                     model_step, steps, steady_from=1 + warmup)
    ways["resident"] = probe.summarise(spans, warmup, batch, cpu)
    # ImageFolder's place: two DataLoader workers at 8 ms of CPU per sample
    loader = torch.utils.data.DataLoader(BurningImages(), batch_size=batch, num_workers=2)
    _, spans, cpu = probe.time_steps(lambda: iter(loader), model_step, steps,
                                     steady_from=1 + warmup)
    ways["imagefolder"] = probe.summarise(spans, warmup, batch, cpu)
    # the shards' place: a thread of this process at 3 ms per sample
    _, spans, cpu = probe.time_steps(lambda: thread_batches(0.003, batch), model_step, steps,
                                     steady_from=1 + warmup)
    ways["shards"] = probe.summarise(spans, warmup, batch, cpu)

    assert ways["resident"]["steady"]["input_cpu_ms_per_sample"] < 0.5
    assert ways["imagefolder"]["steady"]["input_cpu_ms_per_sample"] == pytest.approx(8, rel=0.3)
    assert ways["shards"]["steady"]["input_cpu_ms_per_sample"] == pytest.approx(3, rel=0.3)
    c = probe.capacity(ways, batch, step_ms=10)
    # the sentence's numbers are those of the known costs: at a ~60 ms step,
    # 8 ms x 4 / 60 = 0.53 and 3 ms x 4 / 60 = 0.2 cores; at 10 ms, 3.2 and 1.2
    m = re.search(r"spends ([\d.]+) ms of CPU and shardkit.Loader ([\d.]+) ms; .* measured "
                  r"(\d+) ms step \(batch 4, resident input\) they need ([\d.]+) and ([\d.]+) "
                  r"host cores, at a 10 ms step \(--step-ms\) ([\d.]+) and ([\d.]+)\.$",
                  c["sentence"])
    assert m, c["sentence"]
    folder_ms, shards_ms, step_ms, f_cores, s_cores, f_given, s_given = map(float, m.groups())
    assert folder_ms == pytest.approx(8, rel=0.3) and shards_ms == pytest.approx(3, rel=0.3)
    assert step_ms == pytest.approx(1e3 * step_s, rel=0.3)
    assert f_cores == pytest.approx(8 * 4 / (1e3 * step_s), rel=0.4)
    assert s_cores == pytest.approx(3 * 4 / (1e3 * step_s), rel=0.4)
    assert f_given == pytest.approx(3.2, rel=0.3) and s_given == pytest.approx(1.2, rel=0.3)


def test_slowest_rank_is_the_one_waiting_longest():
    def ways(folder_wait, shards_wait):
        out = {}
        for w, wait in (("resident", 0), ("imagefolder", folder_wait), ("shards", shards_wait)):
            out[w] = {"steady": {"step_ms": 100, "wait_ms": wait, "wait_share": wait / 100,
                                 "input_cpu_ms_per_sample": 1.0}}
        return out
    ranks, slowest, sentence = probe.rank_report([ways(10, 3), ways(40, 1), ways(20, 2)])
    assert [r["rank"] for r in ranks] == [0, 1, 2]
    assert ranks[1]["ways"]["imagefolder"]["wait_ms"] == 40
    assert slowest["imagefolder"] == {"rank": 1, "wait_ms": 40, "fastest_wait_ms": 10}
    assert slowest["shards"] == {"rank": 0, "wait_ms": 3, "fastest_wait_ms": 1}
    assert sentence == ("slowest rank: ImageFolder + DataLoader: rank 1, waiting 40 ms per step "
                        "(the least waiting rank 10 ms); shardkit.Loader: rank 0, waiting 3 ms "
                        "per step (the least waiting rank 1 ms).")


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
    # the capacity answer from the CPU the input paths spent (workers, threads)
    c = report["capacity"]
    assert c["step_ms"] == {"measured": report["ways"]["resident"]["steady"]["step_ms"],
                            "given": None}
    for way in ("imagefolder", "shards"):
        per_image = report["ways"][way]["steady"]["input_cpu_ms_per_sample"]
        assert per_image > 0 and c["input_cpu_ms_per_sample"][way] == per_image
        assert c["cores"][way]["measured"] == pytest.approx(
            per_image * 8 / c["step_ms"]["measured"])
    assert c["sentence"].startswith("capacity: per image, ImageFolder + DataLoader spends ")
    assert report["ranks"] is None and report["settings"]["world_size"] == 1
    spans = [e for e in json.loads(trace.read_text())["traceEvents"] if e["ph"] == "X"]
    assert len(spans) == 2 * 3 * 4 * 2  # rounds x ways x steps x (wait, step)
    assert {e["name"] for e in spans} == {"startup", "data-wait", "model-step"}
    # without --json: the table, the note, the verdict and the capacity
    r = run_probe(src, dst, "--steps", "3", "--warmup", "0", "--batch-size", "8",
                  "--workers", "0", "--threads", "1", "--step-ms", "25")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[1].startswith("note: ")
    for title in probe.WAY_TITLES.values():
        assert sum(line.startswith(title) for line in lines) == 1
    assert lines[-2].startswith(("input-bound:", "compute-bound:"))
    assert lines[-1].startswith("capacity: per image, ") and "at a 25 ms step (--step-ms)" in lines[-1]


def test_step_ms_must_be_a_positive_number():
    for bad in ("0", "-5", "x", "inf"):
        r = run_probe("a", "b", "--step-ms", bad)
        assert r.returncode == 2 and "--step-ms" in r.stderr, (bad, r.stderr)


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_under_torchrun_every_rank_reports_its_wait(flat):
    pytest.importorskip("torchvision")
    src, dst = flat
    # --redirects 2 --tee 2: Debian 12's torchrun fails with its default (see
    # test_train_example.py); the ranks' stdout stays torchrun's
    r = subprocess.run([PYTHON, "-m", "torch.distributed.run", "--nnodes", "1",
                        "--nproc_per_node", "2", "--master_addr", "127.0.0.1", "--master_port",
                        str(free_port()), "--redirects", "2", "--tee", "2", "-m",
                        "shardkit.probe", src, dst, "--steps", "4", "--warmup", "1",
                        "--batch-size", "4", "--workers", "0", "--threads", "1", "--json"],
                       capture_output=True, text=True, env=subprocess_env(), timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    report = json.loads(r.stdout[r.stdout.index("{"):r.stdout.rindex("}") + 1])  # rank 0's only
    assert r.stdout.count('"verdict"') == 1
    assert report["settings"]["world_size"] == 2
    assert [rank["rank"] for rank in report["ranks"]] == [0, 1]
    for rank in report["ranks"]:
        for way in probe.WAYS:
            assert rank["ways"][way]["step_ms"] > 0 and rank["ways"][way]["wait_ms"] >= 0
    assert report["ranks"][0]["ways"]["shards"]["wait_ms"] == \
        report["ways"]["shards"]["steady"]["wait_ms"]
    for way in ("imagefolder", "shards"):
        waits = [rank["ways"][way]["wait_ms"] for rank in report["ranks"]]
        slowest = report["slowest_rank"][way]
        assert waits[slowest["rank"]] == max(waits) == slowest["wait_ms"]
    assert report["slowest_rank"]["sentence"].startswith("slowest rank: ")
