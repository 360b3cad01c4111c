#!/usr/bin/python3
"""Image-text training input (CLIP-style): shardkit.Loader with captions
against WebDataset + DataLoader over the tars img2dataset writes.

    PYTHONPATH=build/python:../shared/peers/webdataset /usr/bin/python3 \\
        bench/clip_input.py BIN DATASET [--threads N] [--runs R] [--epochs E] [--json]

The source is what img2dataset writes: WebDataset tar shards (TAR_SAMPLES
samples each) of `KEY.jpg` (the image at SIZE on its shorter side, JPEG
q90, as img2dataset --image_size SIZE --resize_mode keep_ratio gives it),
`KEY.txt` (a caption) and `KEY.json` (its metadata), made here from DATASET
(a folder of images such as the imagenet sample).  Both sides read the same
samples with the same cores (--threads: loader threads, DataLoader
num_workers), the same augmentation - RandomResizedCrop(224), a horizontal
flip, Normalize - the same output, float32 NCHW batches of 64, and the
captions as a list of str per batch:

  wds       WebDataset + DataLoader over those tars: decode("pil"), the
            transforms in Python, captions and metadata decoded, batched in the
            workers (captions a list of str, metadata a list of dict)
  shards    shardkit.Loader over `shardify --archives TARS --field
            caption=text,from=.txt --field meta=json,from=.json` shards,
            fields=["caption", "meta"]: the JSON parsed per sample too
  shards-raw  the same with --codec raw shards
  shards-nofields  the jpeg shards without fields: what the fields cost

Each figure is samples/s over epochs 2..E of one run, the median over R runs
taking the paths in turn, with the CPU time per sample of the whole run
beside it (every process counted).  Target: shards >= 5x wds.
"""
import io
import json
import os
import subprocess
import tempfile

from train_input import (BATCH, CROP, SHUFFLE, SIZE, pair_run_args, report_pair_runs,
                         run_in_turn, shardkit_loader, steady_rate, torch_transform)

TAR_SAMPLES = 250
TARGETS = {("shards", "wds"): 5}
PATHS = ("wds", "shards", "shards-raw", "shards-nofields")
WORDS = ("a photo of the small red dog sitting on a wooden table near an open window in the "
         "morning light with a cup of coffee").split()


def make_tars(dataset, out):
    """img2dataset's output: tars of KEY.jpg (SIZE on the shorter side), KEY.txt, KEY.json."""
    import webdataset as wds
    from PIL import Image
    names = sorted(n for n in os.listdir(dataset) if n.lower().endswith((".jpg", ".jpeg")))
    os.makedirs(out)
    with wds.ShardWriter(os.path.join(out, "%05d.tar"), maxcount=TAR_SAMPLES, verbose=0) as sink:
        for i, name in enumerate(names):
            img = Image.open(os.path.join(dataset, name)).convert("RGB")
            w, h = img.size
            s = SIZE / min(w, h)
            img = img.resize((max(1, round(w * s)), max(1, round(h * s))), Image.BICUBIC)
            buf = io.BytesIO()
            img.save(buf, "JPEG", quality=90)
            caption = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(8 + i % 12))
            meta = {"url": f"https://example.invalid/{i}.jpg", "key": f"{i:09d}",
                    "status": "success", "width": img.size[0], "height": img.size[1],
                    "original_width": w, "original_height": h, "similarity": 0.3 + (i % 9) / 100}
            sink.write({"__key__": f"{i:09d}", "jpg": buf.getvalue(), "txt": caption,
                        "json": json.dumps(meta).encode()})
    with open(os.path.join(out, "00000_stats.json"), "w") as f:
        json.dump({"successes": len(names)}, f)  # what img2dataset leaves beside its tars
    return sorted(os.path.join(out, f) for f in os.listdir(out) if f.endswith(".tar"))


def make_shards(bin_dir, tars_dir, dst, codec, fields):
    extra = ["--field", "caption=text,from=.txt", "--field", "meta=json,from=.json"] \
        if fields else []
    level = ["--zstd-level", "-100"] if codec == "raw" else []
    subprocess.run([os.path.join(bin_dir, "shardify"), "--archives", tars_dir, dst,
                    "--size", str(SIZE), "--codec", codec, *level, "--labels", "none",
                    "--quiet", *extra], check=True)


def webdataset_loader(tars, threads):
    import torch
    import webdataset as wds
    transform = torch_transform()
    pipeline = (wds.WebDataset(tars, shardshuffle=len(tars), empty_check=False)
                .shuffle(SHUFFLE).decode("pil").to_tuple("jpg", "txt", "json")
                .map_tuple(transform, lambda t: t, lambda j: j)
                .batched(BATCH, collation_fn=collate))
    return torch.utils.data.DataLoader(pipeline, batch_size=None, num_workers=threads,
                                       persistent_workers=threads > 0)


def collate(samples):
    """Images stacked; captions a list of str and metadata a list of dict, as a
    CLIP training loop takes them (the tokenizer runs on the main process)."""
    import torch
    images, captions, metas = zip(*samples)
    return torch.stack(images), list(captions), list(metas)


def captioned_images(images, captions):
    """images, once captions (None: a path without fields) are a str per image."""
    assert captions is None or (len(captions) == images.shape[0] and
                                isinstance(captions[0], str))
    return images


def run_path(path, a, work):
    if path == "wds":
        loader = webdataset_loader(work["tars"], a.threads)

        def unpack(batch):
            images, captions, metas = batch
            assert isinstance(metas[0], dict)
            return captioned_images(images, captions)
        result = steady_rate(loader, a.epochs, unpack=unpack)
        del loader
        return result
    fields = path != "shards-nofields"
    with shardkit_loader(work[path], a.threads,
                         fields=["caption", "meta"] if fields else None) as loader:
        def unpack(batch):
            if fields:
                assert isinstance(batch.fields["meta"][0], dict)
                return captioned_images(batch.images, batch.fields["caption"])
            return captioned_images(batch.images, None)
        return steady_rate(loader, a.epochs, loader.set_epoch, unpack)


def main():
    a = pair_run_args(__doc__, PATHS)
    paths = a.paths.split(",")
    with tempfile.TemporaryDirectory(prefix="shardkit-clip-input.") as tmp:
        work = {"tars": make_tars(a.dataset, os.path.join(tmp, "tars"))}
        for path, codec, fields in (("shards", "jpeg", True), ("shards-raw", "raw", True),
                                    ("shards-nofields", "jpeg", False)):
            work[path] = os.path.join(tmp, path)
            make_shards(a.bin, os.path.join(tmp, "tars"), work[path], codec, fields)
        rates, cpu = run_in_turn(a, paths, lambda path: run_path(path, a, work))
    report_pair_runs(a, paths, rates, cpu, TARGETS, {("shards-nofields", "shards"): None},
                     f"RandomResizedCrop({CROP}) + flip + Normalize, float32 NCHW, captions as "
                     f"str and metadata as dict per sample")


if __name__ == "__main__":
    import results
    results.keep(__file__)  # the raw results, in bench/results/
    main()
