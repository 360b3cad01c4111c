"""examples/pytorch/train.py under torchrun (DDP, gloo, two ranks): killed
mid-run and started again from its checkpoint, every rank continues with
byte for byte the batches an uninterrupted loader gives, each step once."""
import hashlib
import json
import os
import signal
import socket
import subprocess
import time

import pytest

from conftest import PYTHON, TOP, subprocess_env

torch = pytest.importorskip("torch")
import shardkit  # noqa: E402

TRAIN = os.path.join(TOP, "examples", "pytorch", "train.py")
BATCH, CROP, STEPS, EVERY, WORLD = 16, 64, 40, 3, 2
MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun(shards, workdir):
    # --redirects 2 --tee 2: Debian 12's torchrun (torch 1.13 on Python 3.11)
    # fails with its default, 0 (README.md beside train.py).  A free port of
    # its own for each job (--standalone's fixed 29400 may be taken).
    return [PYTHON, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node",
            str(WORLD), "--master_addr", "127.0.0.1", "--master_port", str(free_port()),
            "--redirects", "2", "--tee", "2", TRAIN, shards, "--batch-size", str(BATCH), "--crop", str(CROP),
            "--epochs", "3", "--threads", "1", "--max-steps", str(STEPS),
            "--checkpoint", str(workdir / "ckpt.pt"), "--checkpoint-every", str(EVERY),
            "--log", str(workdir / "log")]


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


@pytest.mark.parametrize("batch, remainder", [(25, "keep"), (16, "default")])
def test_a_torchrun_job_whose_ranks_step_together_exits_0(jpeg256, tmp_path, batch, remainder):
    # 1000 samples over 2 ranks: a share of 500, a multiple of 25 (keep is
    # accepted), not of 16 (the default pads)
    script = tmp_path / "steps.py"
    script.write_text(DDP_STEPS)
    done = subprocess.run(
        [PYTHON, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node", str(WORLD),
         "--master_addr", "127.0.0.1", "--master_port", str(free_port()), "--redirects", "2",
         "--tee", "2", str(script), jpeg256, str(batch), remainder, str(tmp_path)],
        env=subprocess_env(OMP_NUM_THREADS="1"), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    # every rank the same steps: 20 batches of 25, or 32 of 16 (the last
    # one of 4), each of the two epochs
    steps = {25: 20, 16: 32}[batch] * 2
    expected = str([(steps, "keep" if remainder == "keep" else "pad")] * WORLD)
    said = [(tmp_path / f"rank-{r}.txt").read_text() for r in range(WORLD)]
    assert said == [expected] * WORLD, said
