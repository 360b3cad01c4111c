"""Pixels as stored (issue 34): a grey dataset's samples and batches have 1 channel, Normalize
takes one mean per channel, transforms work on each channel, and a Loader without a transform
batches equal-size samples as one array.  Expected values come from the source arrays."""
import numpy as np
import pytest
from PIL import Image

import shardkit
from conftest import shardify


@pytest.fixture(scope="module")
def grey(tmp_path_factory):
    top = tmp_path_factory.mktemp("grey")
    rng = np.random.default_rng(7)
    arrays = {}
    for c in ("a", "b"):
        (top / "src" / c).mkdir(parents=True)
        for i in range(4):
            a = rng.integers(0, 256, (28, 28), dtype=np.uint8)
            Image.fromarray(a, "L").save(top / "src" / c / f"{i}.png")
            arrays[f"{c}/{i}.png"] = a
    shardify(str(top / "src"), str(top / "raw"), "--codec", "raw", "--size", "28")
    return str(top / "raw"), arrays


def test_grey_samples_have_one_channel(grey):
    dst, arrays = grey
    ds = shardkit.Dataset(dst)
    assert ds.manifest["stored"] == {"pixels": "gray", "depth": 8, "size": [28, 28]}
    for s in ds:
        assert s.image.shape == (28, 28, 1) and s.image.dtype == np.uint8
        assert (s.image[:, :, 0] == arrays[s.key]).all()


def test_equal_sizes_batch_as_one_array_without_a_transform(grey):
    dst, arrays = grey
    batches = list(shardkit.Loader(dst, batch_size=3, shuffle=False))
    assert [b.images.shape for b in batches] == [(3, 28, 28, 1), (3, 28, 28, 1), (2, 28, 28, 1)]
    keys = [k for b in batches for k in b.keys]
    stacked = np.concatenate([b.images for b in batches])
    assert all((stacked[i, :, :, 0] == arrays[k]).all() for i, k in enumerate(keys))


def test_normalize_takes_one_mean_per_channel(grey):
    dst, arrays = grey
    loader = shardkit.Loader(dst, batch_size=8, shuffle=False, dtype="float32", layout="NCHW",
                             transform=[shardkit.RandomHorizontalFlip(1.0),
                                        shardkit.Normalize([0.5], [0.25])])
    b = next(iter(loader))
    assert b.images.shape == (8, 1, 28, 28) and b.images.dtype == np.float32
    for i, k in enumerate(b.keys):
        want = (arrays[k][:, ::-1].astype(np.float32) / np.float32(255) - np.float32(0.5)) \
            / np.float32(0.25)
        assert np.array_equal(b.images[i, 0], want), k


def test_a_crop_works_on_each_channel(grey):
    dst, arrays = grey
    b = next(iter(shardkit.Loader(dst, batch_size=2, shuffle=False,
                                  transform=[shardkit.CenterCrop(20)])))
    assert b.images.shape == (2, 20, 20, 1)
    assert all((b.images[i, :, :, 0] == arrays[k][4:24, 4:24]).all() for i, k in enumerate(b.keys))


@pytest.mark.parametrize("mean, std", [([0.5, 0.5], [1.0]), ([0.1] * 4, [1.0] * 4), ([], [])])
def test_normalize_refuses_means_that_fit_no_form(mean, std):
    with pytest.raises(ValueError):
        shardkit.Normalize(mean, std)


def test_to_rgb_gives_a_grey_dataset_three_channels(grey):
    dst, arrays = grey
    b = next(iter(shardkit.Loader(dst, batch_size=4, shuffle=False, to="rgb")))
    assert b.images.shape == (4, 28, 28, 3)
    for i, k in enumerate(b.keys):
        assert all((b.images[i, :, :, c] == arrays[k]).all() for c in range(3)), k
    with pytest.raises(ValueError, match="to must be"):
        shardkit.Loader(dst, batch_size=4, to="cmyk")


@pytest.fixture(scope="module")
def sixteen(tmp_path_factory):
    top = tmp_path_factory.mktemp("sixteen")
    rng = np.random.default_rng(16)
    arrays = {}
    (top / "src" / "x").mkdir(parents=True)
    for i in range(3):
        a = rng.integers(0, 65536, (12, 16), dtype=np.uint16)
        Image.fromarray(a).save(top / "src" / "x" / f"{i}.png")
        arrays[f"x/{i}.png"] = a
    shardify(str(top / "src"), str(top / "png"), "--codec", "png", "--size", "12",
             "--no-upscale")
    return str(top / "png"), arrays


def test_sixteen_bit_samples_and_batches_are_uint16(sixteen):
    dst, arrays = sixteen
    ds = shardkit.Dataset(dst)
    assert ds.manifest["stored"] == {"pixels": "gray", "depth": 16, "size": [16, 12]}
    assert all(s.image.dtype == np.uint16 and (s.image[:, :, 0] == arrays[s.key]).all()
               for s in ds)
    b = next(iter(shardkit.Loader(ds, batch_size=3, shuffle=False)))
    assert b.images.dtype == np.uint16 and b.images.shape == (3, 12, 16, 1)


def test_float32_scales_sixteen_bits_by_1_65535(sixteen):
    dst, arrays = sixteen
    loader = shardkit.Loader(dst, batch_size=3, shuffle=False, dtype="float32", layout="NCHW",
                             transform=[shardkit.CenterCrop(8), shardkit.Normalize([0.5], [2.0])])
    b = next(iter(loader))
    assert b.images.shape == (3, 1, 8, 8) and b.images.dtype == np.float32
    for i, k in enumerate(b.keys):
        crop = arrays[k][2:10, 4:12].astype(np.float32)
        want = (crop / np.float32(65535) - np.float32(0.5)) / np.float32(2.0)
        assert np.array_equal(b.images[i, 0], want), k
    b8 = next(iter(shardkit.Loader(dst, batch_size=3, shuffle=False, dtype="uint8",
                                   transform=[shardkit.RandomHorizontalFlip(1.0)])))
    assert b8.images.dtype == np.uint8
    for i, k in enumerate(b8.keys):
        want = ((arrays[k][:, ::-1].astype(np.uint32) * 255 + 32767) // 65535).astype(np.uint8)
        assert (b8.images[i, :, :, 0] == want).all(), k


@pytest.mark.parametrize("layout, transform", [("NHWC", [shardkit.RandomHorizontalFlip(1.0)]),
                                               ("NCHW", None), ("NHWC", None)])
def test_sixteen_bits_stay_sixteen_through_transforms_by_default(sixteen, layout, transform):
    dst, arrays = sixteen
    b = next(iter(shardkit.Loader(dst, batch_size=3, shuffle=False, layout=layout,
                                  transform=transform)))
    assert b.images.dtype == np.uint16
    for i, k in enumerate(b.keys):
        want = arrays[k][:, ::-1] if transform else arrays[k]
        got = b.images[i, 0] if layout == "NCHW" else b.images[i, :, :, 0]
        assert (got == want).all(), k
    with pytest.raises(ValueError, match="float"):
        shardkit.Loader(dst, batch_size=3, dtype="uint16", transform=[shardkit.Normalize([0], [1])])


def test_sixteen_bit_torch_batches_are_int32(sixteen):
    torch = pytest.importorskip("torch")
    dst, arrays = sixteen
    b = next(iter(shardkit.Loader(dst, batch_size=3, shuffle=False, output="torch",
                                  transform=[shardkit.RandomHorizontalFlip(1.0)])))
    assert b.images.dtype == torch.int32 and tuple(b.images.shape) == (3, 12, 16, 1)
    for i, k in enumerate(b.keys):
        assert (b.images[i, :, :, 0].numpy() == arrays[k][:, ::-1]).all(), k


def test_uint16_gives_eight_bit_samples_times_257(grey):
    dst, arrays = grey
    b = next(iter(shardkit.Loader(dst, batch_size=4, shuffle=False, dtype="uint16",
                                  transform=[shardkit.CenterCrop(20)])))
    assert b.images.dtype == np.uint16 and b.images.shape == (4, 20, 20, 1)
    for i, k in enumerate(b.keys):
        assert (b.images[i, :, :, 0] == arrays[k][4:24, 4:24].astype(np.uint16) * 257).all(), k
