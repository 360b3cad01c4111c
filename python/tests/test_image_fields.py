"""An image field (a second image of each sample: --field depth=image,
from=.depth.png) read back and moved by the Loader's transforms with its
image, pixel for pixel.

Each sample's depth file is its image with the channels reversed (BGR): the
resampling works channel by channel, so whatever crop, resize and flip the
image went through, the depth field that went through the same ones is
exactly the image's pixels reversed - and any other crop, size or flip is
not."""
import subprocess

import numpy as np
import pytest
from PIL import Image

import shardkit
from conftest import tool

SIZES = [(40, 30), (30, 52), (64, 64), (23, 41), (50, 20), (36, 36)]


@pytest.fixture(scope="module")
def depth(tmp_path_factory):
    """The same samples converted with the png codec (lossless) and jpeg."""
    top = tmp_path_factory.mktemp("depth")
    rng = np.random.default_rng(11)
    src = top / "src"
    src.mkdir()
    for k, (w, h) in enumerate(SIZES):
        pixels = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(src / f"{k}.png")
        Image.fromarray(np.ascontiguousarray(pixels[..., ::-1])).save(src / f"{k}.depth.png")
    out = {}
    for codec in ("png", "jpeg"):
        out[codec] = top / codec
        subprocess.run([tool("shardify"), "--quiet", "--labels", "none", "--size", "32",
                        "--codec", codec, "--field", "depth=image,from=.depth.png,required",
                        src, out[codec]], check=True)
    return out


def test_the_depth_field_is_read_as_an_image_the_size_of_its_sample(depth):
    ds = shardkit.Dataset(depth["png"])
    assert ds.fields["depth"].type == "image"
    assert ds.fields["depth"].source == ("sidecar", ".depth.png")
    for s in ds:
        d = s.fields["depth"]
        assert d.dtype == np.uint8 and d.shape == s.image.shape
        assert np.array_equal(d, s.image[..., ::-1]), s.key


def test_random_crops_and_flips_move_the_depth_field_with_its_image(depth):
    ds = shardkit.Dataset(depth["png"])
    steps = [shardkit.RandomResizedCrop(24, scale=(0.05, 1.0)), shardkit.RandomHorizontalFlip()]
    loader = shardkit.Loader(ds, batch_size=4, seed=5, fields=["depth"], transform=steps)
    cropped = 0
    for epoch in range(20):
        loader.set_epoch(epoch)
        for batch in loader:
            images, d = batch.images, batch.fields["depth"]
            assert isinstance(d, np.ndarray) and d.dtype == np.uint8
            assert d.shape == images.shape == (len(batch.indices), 24, 24, 3)
            assert np.array_equal(d, images[..., ::-1]), epoch
            for j, index in enumerate(batch.indices):
                whole = np.asarray(Image.fromarray(ds[int(index)].image).resize((24, 24),
                                                                                Image.BILINEAR))
                cropped += not np.array_equal(images[j], whole)
    assert cropped > 50  # the draws did crop


def test_a_float_output_leaves_the_depth_field_uint8_and_moves_it_alike(depth):
    ds = shardkit.Dataset(depth["png"])
    steps = [shardkit.RandomResizedCrop(24), shardkit.RandomHorizontalFlip(),
             shardkit.Normalize([0.5, 0.5, 0.5], [0.25, 0.25, 0.25])]
    plain = shardkit.Loader(ds, batch_size=3, seed=9, fields=["depth"], transform=steps[:2])
    floats = shardkit.Loader(ds, batch_size=3, seed=9, fields=["depth"], transform=steps,
                             dtype="float32", layout="NCHW")
    for a, b in zip(plain, floats):
        assert b.images.dtype == np.float32 and b.images.shape[1] == 3
        assert b.fields["depth"].dtype == np.uint8
        assert np.array_equal(a.fields["depth"], b.fields["depth"])
        assert np.array_equal(b.fields["depth"], a.images[..., ::-1])


def test_without_a_fixed_size_the_depth_fields_are_a_list_moved_alike(depth):
    ds = shardkit.Dataset(depth["png"])
    loader = shardkit.Loader(ds, batch_size=4, seed=2, fields=["depth"],
                             transform=[shardkit.RandomHorizontalFlip()])
    flipped = 0
    for epoch in range(4):
        loader.set_epoch(epoch)
        for batch in loader:
            assert isinstance(batch.fields["depth"], list)
            for image, d, index in zip(batch.images, batch.fields["depth"], batch.indices):
                assert np.array_equal(d, image[..., ::-1])
                flipped += np.array_equal(image, ds[int(index)].image[:, ::-1])
    assert flipped > 0  # the draws did flip
    identity = shardkit.Loader(ds, batch_size=4, fields=["depth"])
    for batch in identity:
        for image, d in zip(batch.images, batch.fields["depth"]):
            assert np.array_equal(d, image[..., ::-1])


def test_jpeg_records_read_around_their_crop_move_the_depth_field_the_same_way(depth):
    # the jpeg records are decoded only around the first crop's box: their
    # depth fields (stored raw either way) come out as the png dataset's
    steps = [shardkit.RandomResizedCrop(20, scale=(0.05, 0.5)), shardkit.RandomHorizontalFlip()]
    runs = [shardkit.Loader(shardkit.Dataset(depth[c]), batch_size=3, seed=4, fields=["depth"],
                            transform=steps, output="torch") for c in ("png", "jpeg")]
    batches = 0
    for a, b in zip(*runs):
        assert a.indices.tolist() == b.indices.tolist()
        assert a.fields["depth"].shape == (len(a.indices), 20, 20, 3)
        assert bool((a.fields["depth"] == b.fields["depth"]).all())
        batches += 1
    assert batches == 2
