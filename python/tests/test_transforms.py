"""Transforms in C: torchvision's semantics (within one level of 255 where
resampling is involved, exact elsewhere), torchvision's RandomResizedCrop
distribution, and the random stream include/shardkit/loader.h specifies."""
import math
import struct

import numpy as np
import pytest
import xxhash

import shardkit

MASK = (1 << 64) - 1
MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


# ---- the random stream, re-implemented from include/shardkit/loader.h ----------

class Stream:
    def __init__(self, seed, epoch, index):
        data = struct.pack("<4Q", 3, epoch, 0, index)
        self.state = xxhash.xxh3_64_intdigest(data, seed=seed)

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def uniform(self, lo, hi):
        return lo + (hi - lo) * ((self.next() >> 11) * 2.0 ** -53)

    def below(self, bound):
        m = self.next() * bound
        low = m & MASK
        if low < bound:
            threshold = (-bound % (1 << 64)) % bound
            while low < threshold:
                m = self.next() * bound
                low = m & MASK
        return m >> 64


def spec_random_resized_crop(stream, w, h, scale, ratio):
    area = w * h
    lo, hi = math.log(ratio[0]), math.log(ratio[1])
    for attempt in range(1, 11):
        target = area * stream.uniform(*scale)
        aspect = math.exp(stream.uniform(lo, hi))
        bw, bh = round(math.sqrt(target * aspect)), round(math.sqrt(target / aspect))
        if 0 < bw <= w and 0 < bh <= h:
            top = stream.below(h - bh + 1)
            left = stream.below(w - bw + 1)
            return left, top, bw, bh, attempt
    in_ratio = w / h
    if in_ratio < ratio[0]:
        bw, bh = w, round(w / ratio[0])
    elif in_ratio > ratio[1]:
        bw, bh = round(h * ratio[1]), h
    else:
        bw, bh = w, h
    return (w - bw) // 2, (h - bh) // 2, bw, bh, 0


SIZES = [(500, 375), (256, 341), (341, 256), (224, 224), (1000, 12), (12, 1000), (1, 1), (3, 400)]


def test_random_choices_are_exactly_the_specified_stream():
    scale, ratio = (0.08, 1.0), (3 / 4, 4 / 3)
    t = shardkit.Compose([shardkit.RandomResizedCrop(224, scale, ratio),
                          shardkit.RandomHorizontalFlip(0.3), shardkit.Normalize(MEAN, STD)])
    fallbacks = 0
    for seed in (0, 1, 2 ** 64 - 1):
        for epoch in (0, 5):
            for w, h in SIZES:
                for index in range(0, 4000, 37):
                    got = t.draw(w, h, seed=seed, epoch=epoch, index=index)
                    s = Stream(seed, epoch, index)
                    left, top, bw, bh, attempt = spec_random_resized_crop(s, w, h, scale, ratio)
                    assert (got[0]["left"], got[0]["top"], got[0]["box_width"],
                            got[0]["box_height"], got[0]["attempts"]) == \
                        (left, top, bw, bh, attempt), (seed, epoch, w, h, index)
                    assert got[1]["flip"] == (s.uniform(0, 1) < 0.3)
                    fallbacks += attempt == 0
    assert fallbacks > 0  # the slivers exercise the centre fallback


def test_random_resized_crop_boxes_follow_torchvision_get_params():
    torch = pytest.importorskip("torch")
    from torchvision.transforms import RandomResizedCrop as TorchRRC
    draws = 4000
    qs = [0.05, 0.25, 0.5, 0.75, 0.95]
    ours = shardkit.RandomResizedCrop(224)
    torch.manual_seed(0)
    for w, h in [(500, 375), (256, 341), (800, 200)]:
        mine, theirs = [], []
        for index in range(draws):
            c = shardkit.Compose([ours]).draw(w, h, index=index)[0]
            mine.append((c["box_width"], c["box_height"], c["left"], c["top"]))
            top, left, bh, bw = TorchRRC.get_params(torch.empty(3, h, w), list(ours.scale),
                                                    list(ours.ratio))
            theirs.append((bw, bh, left, top))
        a, b = np.array(mine, float), np.array(theirs, float)
        for name, f, tolerance in [
            ("area fraction", lambda v: v[:, 0] * v[:, 1] / (w * h), 0.03),
            ("log aspect", lambda v: np.log(v[:, 0] / v[:, 1]), 0.06),
            ("left / free width", lambda v: v[:, 2] / np.maximum(w - v[:, 0], 1), 0.05),
            ("top / free height", lambda v: v[:, 3] / np.maximum(h - v[:, 1], 1), 0.05),
        ]:
            qa, qb = np.quantile(f(a), qs), np.quantile(f(b), qs)
            assert np.all(np.abs(qa - qb) <= tolerance), (w, h, name, qa, qb)


@pytest.fixture(scope="module")
def images(jpeg256):
    ds = shardkit.Dataset(jpeg256)
    return [ds[i].image for i in range(0, 1000, 97)]


def max_difference(a, b):
    assert a.shape == b.shape, (a.shape, b.shape)
    return int(np.abs(a.astype(np.int64) - b.astype(np.int64)).max())


def test_resize_and_crops_match_torchvision_functional_within_one_level(images):
    pytest.importorskip("torch")
    import torchvision.transforms.functional as F
    from PIL import Image
    cases = [
        (shardkit.Resize(200), lambda p: F.resize(p, 200)),
        (shardkit.Resize(50), lambda p: F.resize(p, 50)),
        (shardkit.Resize(600), lambda p: F.resize(p, 600)),
        (shardkit.Resize((150, 300)), lambda p: F.resize(p, [150, 300])),
        (shardkit.CenterCrop(224), lambda p: F.center_crop(p, 224)),
        (shardkit.CenterCrop((101, 300)), lambda p: F.center_crop(p, [101, 300])),
        (shardkit.CenterCrop(400), lambda p: F.center_crop(p, 400)),  # padded
        (shardkit.Compose([shardkit.Resize(230), shardkit.CenterCrop(224)]),
         lambda p: F.center_crop(F.resize(p, 230), 224)),
        (shardkit.Compose([shardkit.RandomHorizontalFlip(1.0), shardkit.CenterCrop(201)]),
         lambda p: F.center_crop(F.hflip(p), 201)),
    ]
    for image in images:
        pil = Image.fromarray(image)
        for ours, theirs in cases:
            exact = not any(isinstance(t, shardkit.Resize)
                            for t in shardkit.Compose(ours).transforms)
            diff = max_difference(ours(image), np.asarray(theirs(pil)))
            assert diff <= (0 if exact else 1), (repr(ours), diff)


def test_random_resized_crop_is_torchvisions_resized_crop_of_its_box(images):
    pytest.importorskip("torch")
    import torchvision.transforms.functional as F
    from PIL import Image
    t = shardkit.Compose([shardkit.RandomResizedCrop((224, 200)),
                          shardkit.RandomHorizontalFlip()])
    flips = 0
    for index, image in enumerate(images * 3):
        h, w, _ = image.shape
        c, f = t.draw(w, h, seed=9, index=index)
        expected = F.resized_crop(Image.fromarray(image), c["top"], c["left"], c["box_height"],
                                  c["box_width"], [224, 200])
        if f["flip"]:
            expected = F.hflip(expected)
            flips += 1
        assert max_difference(t(image, seed=9, index=index), np.asarray(expected)) <= 1
    assert 0 < flips < len(images) * 3


def test_normalize_is_torchvision_to_tensor_then_normalize_bit_for_bit(images):
    torch = pytest.importorskip("torch")
    import torchvision.transforms.functional as F
    t = shardkit.Compose([shardkit.CenterCrop(200), shardkit.Normalize(MEAN, STD)])
    for image in images:
        expected = F.normalize(F.to_tensor(F.center_crop(torch.from_numpy(image).permute(2, 0, 1),
                                                         200).permute(1, 2, 0).numpy()),
                               MEAN, STD)
        ours = torch.from_numpy(t(image, layout="NCHW", dtype="float32"))
        assert torch.equal(ours, expected)
        ours16 = torch.from_numpy(t(image, layout="NCHW", dtype="float16"))
        assert torch.equal(ours16, expected.half())
        nhwc = t(image, dtype="float32")
        assert np.array_equal(nhwc, expected.permute(1, 2, 0).numpy())
    # without Normalize, float output is x / 255 (ToTensor)
    chw = torch.from_numpy(images[0]).permute(2, 0, 1)
    plain = shardkit.CenterCrop(64)(images[0], dtype="float32", layout="NCHW")
    assert torch.equal(torch.from_numpy(plain), F.center_crop(chw, 64).float().div(255))


def test_output_sizes_are_known_before_decoding():
    assert shardkit.Compose([shardkit.RandomResizedCrop(224)]).output_size() == (224, 224)
    assert shardkit.Compose([shardkit.Resize(256), shardkit.CenterCrop((200, 100))]
                            ).output_size() == (200, 100)
    assert shardkit.Compose([shardkit.CenterCrop(100), shardkit.Resize(50)]
                            ).output_size() == (50, 50)
    assert shardkit.Compose([shardkit.Resize(256)]).output_size() is None
    assert shardkit.Compose([shardkit.RandomHorizontalFlip()]).output_size() is None


def test_the_same_sample_gets_the_same_transforms_and_others_differ(images):
    t = shardkit.Compose([shardkit.RandomResizedCrop(96), shardkit.RandomHorizontalFlip()])
    a = t(images[0], seed=3, epoch=1, index=10)
    assert np.array_equal(a, t(images[0], seed=3, epoch=1, index=10))
    assert not np.array_equal(a, t(images[0], seed=3, epoch=2, index=10))
    assert not np.array_equal(a, t(images[0], seed=4, epoch=1, index=10))
    assert not np.array_equal(a, t(images[0], seed=3, epoch=1, index=11))


@pytest.mark.parametrize("make, error, name", [
    (lambda: shardkit.RandomResizedCrop("224"), TypeError, "size"),
    (lambda: shardkit.RandomResizedCrop(0), ValueError, "size"),
    (lambda: shardkit.RandomResizedCrop((224, 224, 3)), ValueError, "size"),
    (lambda: shardkit.RandomResizedCrop(224, scale=(0.5, 0.1)), ValueError, "scale"),
    (lambda: shardkit.RandomResizedCrop(224, scale=(0, 0.5)), ValueError, "scale"),
    (lambda: shardkit.RandomResizedCrop(224, ratio=(0, 1)), ValueError, "ratio"),
    (lambda: shardkit.RandomResizedCrop(224, ratio=0.5), TypeError, "ratio"),
    (lambda: shardkit.CenterCrop(2.5), TypeError, "size"),
    (lambda: shardkit.Resize(-3), ValueError, "size"),
    (lambda: shardkit.RandomHorizontalFlip(1.5), ValueError, "p"),
    (lambda: shardkit.RandomHorizontalFlip("x"), TypeError, "p"),
    (lambda: shardkit.Normalize([0.5, 0.5], [1, 1, 1]), ValueError, "mean"),
    (lambda: shardkit.Normalize([0.5] * 3, [1, 0, 1]), ValueError, "std"),
    (lambda: shardkit.Compose([shardkit.Resize(8), "flip"]), TypeError, "transform"),
    (lambda: shardkit.Compose([shardkit.Normalize(MEAN, STD), shardkit.CenterCrop(8)])
     ._compiled("NHWC", "float32"), ValueError, "normalize"),
    (lambda: shardkit.Compose([shardkit.Normalize(MEAN, STD)])._compiled("NHWC", "uint8"),
     ValueError, "dtype"),
    (lambda: shardkit.Compose([])._compiled("NWHC", "uint8"), ValueError, "layout"),
])
def test_bad_transform_arguments_name_the_parameter(make, error, name):
    with pytest.raises(error, match=name):
        make()
