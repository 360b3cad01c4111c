"""examples/pytorch/train.py under torchrun (DDP, gloo, two ranks): killed
mid-run and started again from its checkpoint, every rank continues with
byte for byte the batches an uninterrupted loader gives, each step once;
stopped at two ranks and resumed at one and at three, the rest of the epoch
is read once across the new ranks.  The PyTorch guide's DDP loop
(docs/guide/pytorch.md), as written, and a
DDP-like loop exit 0 on two ranks at dataset sizes where ranks holding
floor(N/2) and ceil(N/2) samples would make different batch counts."""
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time

import pytest

from conftest import PYTHON, SAMPLE, TOP, _made, doc_blocks, sample_images, subprocess_env

torch = pytest.importorskip("torch")
import shardkit  # noqa: E402

TRAIN = os.path.join(TOP, "examples", "pytorch", "train.py")
BATCH, CROP, STEPS, EVERY, WORLD = 16, 64, 40, 3, 2
MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun_of(world, *args):
    # --redirects 2 --tee 2: Debian 12's torchrun (torch 1.13 on Python 3.11)
    # fails with its default, 0 (README.md beside train.py).  A free port of
    # its own for each job (--standalone's fixed 29400 may be taken).
    return [PYTHON, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node",
            str(world), "--master_addr", "127.0.0.1", "--master_port", str(free_port()),
            "--redirects", "2", "--tee", "2", *args]


def torchrun(shards, workdir):
    return torchrun_of(WORLD, TRAIN, shards, "--batch-size", str(BATCH), "--crop", str(CROP),
                       "--epochs", "3", "--threads", "1", "--max-steps", str(STEPS),
                       "--checkpoint", str(workdir / "ckpt.pt"), "--checkpoint-every",
                       str(EVERY), "--log", str(workdir / "log"))


def run_job(command, log, cwd=None, timeout=300):
    """Run a torchrun job to its end: (exit status or None when it hung and
    was killed, what it printed)."""
    with open(log, "w") as out:
        job = subprocess.Popen(command, env=subprocess_env(OMP_NUM_THREADS="1"), cwd=cwd,
                               start_new_session=True, stdout=out, stderr=out)
        try:
            code = job.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            if job.poll() is None:
                os.killpg(job.pid, signal.SIGKILL)  # the whole job: torchrun and its ranks
            job.wait()
    return code, open(log).read()


def log_lines(workdir, rank):
    path = workdir / "log" / f"rank-{rank}.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.endswith("}")]


def uninterrupted(shards, rank):
    """(epoch, batch, indices, images digest) of the first STEPS batches of
    this rank, as one loader run gives them."""
    loader = shardkit.Loader(shards, BATCH, seed=0, rank=rank, world_size=WORLD, threads=1,
                             remainder="drop", layout="NCHW", dtype="float32",
                             transform=[shardkit.RandomResizedCrop(CROP),
                                        shardkit.RandomHorizontalFlip(),
                                        shardkit.Normalize(MEAN, STD)])
    out = []
    while len(out) < STEPS:
        for b in loader:
            out.append((b.epoch, b.number, b.indices.tolist(),
                        hashlib.sha256(b.images.tobytes()).hexdigest()))
            if len(out) == STEPS:
                break
    return out


def test_killed_ddp_training_resumes_with_the_batches_of_an_uninterrupted_run(jpeg256,
                                                                              tmp_path):
    env = subprocess_env(OMP_NUM_THREADS="1")
    errors = open(tmp_path / "killed-job.log", "w")
    job = subprocess.Popen(torchrun(jpeg256, tmp_path), env=env, start_new_session=True,
                           stdout=errors, stderr=errors)
    try:
        deadline = time.monotonic() + 120
        while len(log_lines(tmp_path, 0)) < 2 * EVERY and job.poll() is None:
            assert time.monotonic() < deadline, "no training steps within 120 s"
            time.sleep(0.01)
    finally:
        ended = job.poll()
        if ended is None:
            os.killpg(job.pid, signal.SIGKILL)  # the whole job: torchrun and its ranks
        job.wait()
        errors.close()
    assert ended is None, ("the job ended before it was killed:\n"
                           + (tmp_path / "killed-job.log").read_text()[-3000:])
    killed_at = len(log_lines(tmp_path, 0))
    assert killed_at < STEPS
    saved = torch.load(tmp_path / "ckpt.pt")["step"]
    assert saved % EVERY == 0 and EVERY <= saved <= killed_at

    out = open(tmp_path / "resumed-job.log", "w")
    job = subprocess.Popen(torchrun(jpeg256, tmp_path), env=env, start_new_session=True,
                           stdout=out, stderr=out)
    try:
        code = job.wait(timeout=300)
    except subprocess.TimeoutExpired:
        code = None  # a hang: the job is killed below and the test fails
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)  # the whole job: torchrun and its ranks
        job.wait()
        out.close()
    text = (tmp_path / "resumed-job.log").read_text()
    assert code == 0, f"the resumed job {'hung' if code is None else f'exited {code}'}:\n" \
        + text[-3000:]
    assert f"done: {STEPS} steps" in text
    final = torch.load(tmp_path / "ckpt.pt")
    assert final["step"] == STEPS
    batches = -(-(len(shardkit.Dataset(jpeg256)) // WORLD) // BATCH)  # per epoch and rank
    assert [(s["epoch"], s["batch"]) for s in final["loaders"]] == [
        (1, STEPS - batches)] * WORLD

    for rank in range(WORLD):
        lines = log_lines(tmp_path, rank)
        marks = [k for k, line in enumerate(lines) if "resumed" in line]
        assert len(marks) == 1
        before, after = lines[:marks[0]], lines[marks[0] + 1:]
        assert lines[marks[0]]["resumed"] == saved
        assert [s["step"] for s in before[:saved]] == list(range(1, saved + 1))
        assert [s["step"] for s in after] == list(range(saved + 1, STEPS + 1))
        got = [(s["epoch"], s["batch"], s["indices"], s["images"])
               for s in before[:saved] + after]
        assert got == uninterrupted(jpeg256, rank)


def test_a_job_stopped_at_two_ranks_resumes_at_one_and_at_three(jpeg256, tmp_path):
    # two ranks, pad, batches of 16: 500 samples each; stopped after 5 steps
    first = tmp_path / "two"
    first.mkdir()
    common = ["--batch-size", str(BATCH), "--crop", "32", "--threads", "1", "--remainder",
              "pad", "--epochs", "1"]
    code, text = run_job(torchrun_of(2, TRAIN, jpeg256, *common, "--max-steps", "5",
                                     "--checkpoint", str(first / "ckpt.pt"),
                                     "--checkpoint-every", "5", "--log", str(first / "log")),
                         tmp_path / "two.log")
    assert code == 0, text[-3000:]
    seen = [i for r in range(2) for line in log_lines(first, r) for i in line["indices"]]
    assert len(seen) == 2 * 5 * BATCH
    for world in (1, 3):
        job = tmp_path / f"on-{world}"
        job.mkdir()
        shutil.copy(first / "ckpt.pt", job / "ckpt.pt")
        code, text = run_job(torchrun_of(world, TRAIN, jpeg256, *common,
                                         "--checkpoint", str(job / "ckpt.pt"),
                                         "--log", str(job / "log")), tmp_path / f"{world}.log")
        assert code == 0, text[-3000:]
        assert "share the rest of epoch 0" in text
        rest = [[i for line in log_lines(job, r) if "indices" in line for i in line["indices"]]
                for r in range(world)]
        assert len({len(r) for r in rest}) == 1  # the new ranks in step
        flat = sum(rest, [])
        unseen = set(range(1000)) - set(seen)
        # every sample not read before the stop exactly once; pad's fillers read before
        assert sorted(i for i in flat if i in unseen) == sorted(unseen)
        assert all(i in seen for i in flat if i not in unseen)
        assert len(flat) - len(unseen) < world


def sized_dataset(workdir, n):
    """n of the sample photos in two class folders, as shards of 256 px (the
    guide's shardify DIR shards --size 256)."""
    src = os.path.join(workdir, f"sized-{n}-src")
    if not os.path.isdir(src):
        for k, name in enumerate(sample_images()[:n]):
            folder = os.path.join(src, ("ant", "bee")[k % 2])
            os.makedirs(folder, exist_ok=True)
            shutil.copy(os.path.join(SAMPLE, name), os.path.join(folder, name))
    return _made(workdir, f"sized-{n}", "--size", "256", src=src)


def guide_ddp_loop():
    """docs/guide/pytorch.md's DDP training loop: its Python block that
    makes a DistributedDataParallel."""
    found = [b for b in doc_blocks("docs/guide/pytorch.md", "python")
             if "DistributedDataParallel" in b]
    assert len(found) == 1, "docs/guide/pytorch.md has one DDP loop"
    return found[0]


# 1 and 3 samples (fewer than a batch; a rank of one sample more), 129 (shares
# of 64 and 65: 1 and 2 batches of 64 unless padded), 130
@pytest.mark.parametrize("samples", [1, 3, 129, 130])
def test_the_guide_ddp_loop_runs_as_written_on_two_ranks(workdir, photos, tmp_path, samples):
    shards = sized_dataset(workdir, samples)
    os.symlink(shards, tmp_path / "shards")  # the guide's path, "shards"
    script = tmp_path / "train_ddp.py"
    script.write_text(guide_ddp_loop())
    code, text = run_job(torchrun_of(2, str(script)), tmp_path / "job.log", cwd=tmp_path)
    assert code == 0, f"{'hung' if code is None else f'exited {code}'}:\n{text[-3000:]}"


# Two epochs of a DDP-like loop: an all-reduce per batch (a step's
# collective), then every rank's step count gathered, and written by each
# rank to DIR/rank-N.txt.  argv: dataset, batch size, remainder ("default":
# none given), DIR.
DDP_STEPS = """
import sys
import torch, torch.distributed as dist
import shardkit
dist.init_process_group("gloo")
options = {} if sys.argv[3] == "default" else {"remainder": sys.argv[3]}
loader = shardkit.Loader(sys.argv[1], int(sys.argv[2]), threads=1, shuffle=True, **options)
steps = 0
for epoch in range(2):
    loader.set_epoch(epoch)
    for batch in loader:
        dist.all_reduce(torch.ones(1))
        steps += 1
counts = [None] * dist.get_world_size()
dist.all_gather_object(counts, (steps, loader.remainder))
with open(f"{sys.argv[4]}/rank-{dist.get_rank()}.txt", "w") as f:
    f.write(repr(counts))
dist.destroy_process_group()
"""


# 1000 samples over 2 ranks: a share of 500, a multiple of 25 (keep is
# accepted), not of 16 (the default pads); 161 samples: shares of 80 and 81,
# 5 and 6 batches of 16 with keep (what hung), 6 each padded
@pytest.mark.parametrize("samples, batch, remainder, steps", [
    (1000, 25, "keep", 20), (1000, 16, "default", 32), (161, 16, "default", 6)])
def test_a_torchrun_job_whose_ranks_step_together_exits_0(jpeg256, workdir, photos, tmp_path,
                                                          samples, batch, remainder, steps):
    shards = jpeg256 if samples == 1000 else sized_dataset(workdir, samples)
    script = tmp_path / "steps.py"
    script.write_text(DDP_STEPS)
    code, text = run_job(torchrun_of(WORLD, str(script), shards, str(batch), remainder,
                                     str(tmp_path)), tmp_path / "job.log")
    assert code == 0, text[-3000:]
    # every rank the same steps, each of the two epochs
    expected = str([(2 * steps, "keep" if remainder == "keep" else "pad")] * WORLD)
    said = [(tmp_path / f"rank-{r}.txt").read_text() for r in range(WORLD)]
    assert said == [expected] * WORLD, said
