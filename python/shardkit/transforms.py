"""Transforms that run in C, on the loader's threads.

The names, parameters and rules are torchvision's (see include/shardkit/
loader.h for the exact semantics and the random stream).  A transform list is
a plain list or a ``Compose``; it is handed to ``Loader(transform=...)``, or
applied to one image (a numpy uint8 array, height x width x 3) by calling it:

    t = shardkit.Compose([shardkit.Resize(256), shardkit.CenterCrop(224)])
    out = t(image)                     # numpy uint8, 224 x 224 x 3
    out = t(image, seed=1, epoch=0, index=7, layout="NCHW", dtype="float32")

Random choices depend on (seed, epoch, sample index) only, so the same sample
gets the same crop and flip in every run, whatever the thread count.

Resampling (Resize, RandomResizedCrop) uses Pillow's antialiased BILINEAR
filter, which is what torchvision applies to PIL images (and to tensors with
antialias=True): results agree with torchvision within one level of 255.
"""
import math
import numbers

import numpy as np

from shardkit import _native

_DTYPES = ("uint8", "float32", "float16")
_LAYOUTS = ("NHWC", "NCHW")
# The largest value of the C types integer arguments end in: nothing wraps.
U32_MAX = 2**32 - 1


def _check_int(value, name, minimum=1, maximum=None):
    """value as an int when it is one (numpy's too, bools not) in
    minimum..maximum; TypeError or ValueError naming `name` otherwise."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, np.integer)):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    value = int(value)
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, not {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be at most {maximum}, not {value}")
    return value


def _side(value, name):
    """An output side: 1..the library's largest (SHARD_AUGMENT_MAX_SIDE)."""
    return _check_int(value, name, maximum=_native.MAX_SIDE)


def _size(size, name="size"):
    """(height, width) from an int or a sequence of one or two ints."""
    if isinstance(size, (list, tuple)):
        if len(size) == 1:
            s = _side(size[0], name)
            return s, s
        if len(size) == 2:
            return _side(size[0], f"{name}[0]"), _side(size[1], f"{name}[1]")
        raise ValueError(f"{name} must be an int or (height, width), not {len(size)} values")
    s = _side(size, name)
    return s, s


def _numbers(values, count, name):
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
        raise TypeError(f"{name} must be a sequence of {count} numbers, not "
                        f"{type(values).__name__}")
    if len(values) != count:
        raise ValueError(f"{name} must have {count} values, not {len(values)}")
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (numbers.Real, np.number)):
            raise TypeError(f"{name} must hold numbers, not {type(v).__name__}")
        out.append(float(v))
    return tuple(out)


def _range(values, name):
    lo, hi = _numbers(values, 2, name)
    if not 0 < lo <= hi or not math.isfinite(hi):
        raise ValueError(f"{name} must satisfy 0 < first <= second, not {values!r}")
    return lo, hi


class Transform:
    """Base of the transforms: each contributes steps to the C list."""

    def _steps(self):
        raise NotImplementedError

    def __call__(self, image, **kwargs):
        return Compose([self])(image, **kwargs)

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self._repr_args())
        return f"{type(self).__name__}({args})"


class RandomResizedCrop(Transform):
    """A random box of area fraction in `scale` and aspect ratio (w/h) in
    `ratio`, resampled to `size` (int: square; or (height, width)):
    torchvision's get_params (ten tries, then the centre fallback)."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0)):
        self.size = _size(size)
        self.scale = _range(scale, "scale")
        self.ratio = _range(ratio, "ratio")

    def _steps(self):
        h, w = self.size
        return [("random_resized_crop", h, w, self.scale, self.ratio)]

    def _repr_args(self):
        return [("size", self.size), ("scale", self.scale), ("ratio", self.ratio)]


class CenterCrop(Transform):
    """The centred box of `size` (int: square; or (height, width)); a smaller
    image is padded with zeros first, as torchvision does."""

    def __init__(self, size):
        self.size = _size(size)

    def _steps(self):
        h, w = self.size
        return [("center_crop", h, w)]

    def _repr_args(self):
        return [("size", self.size)]


class Resize(Transform):
    """Resample: an int makes the shorter side `size` (the longer one keeps
    the aspect ratio, rounded down); (height, width) gives that size."""

    def __init__(self, size):
        if isinstance(size, (list, tuple)) and len(size) == 2:
            self.size = _size(size)
        else:
            self.size = _size(size)[0]

    def _steps(self):
        if isinstance(self.size, tuple):
            return [("resize", self.size[0], self.size[1])]
        return [("resize", self.size, 0)]

    def _repr_args(self):
        return [("size", self.size)]


class RandomHorizontalFlip(Transform):
    """Mirror left-right with probability p."""

    def __init__(self, p=0.5):
        if isinstance(p, bool) or not isinstance(p, (numbers.Real, np.number)):
            raise TypeError(f"p must be a number, not {type(p).__name__}")
        if not 0.0 <= float(p) <= 1.0:
            raise ValueError(f"p must be in [0, 1], not {p}")
        self.p = float(p)

    def _steps(self):
        return [("horizontal_flip", self.p)]

    def _repr_args(self):
        return [("p", self.p)]


class Normalize(Transform):
    """(x / 255 - mean) / std per channel (RGB), in float32: torchvision's
    ToTensor then Normalize, bit for bit.  Needs a float dtype; only flips
    may follow it."""

    def __init__(self, mean, std):
        self.mean = _numbers(mean, 3, "mean")
        self.std = _numbers(std, 3, "std")
        if any(s == 0 for s in self.std):
            raise ValueError(f"std must not contain 0, not {self.std!r}")

    def _steps(self):
        return [("normalize", self.mean, self.std)]

    def _repr_args(self):
        return [("mean", self.mean), ("std", self.std)]


class Compose(Transform):
    """A list of transforms, applied in order."""

    def __init__(self, transforms):
        if isinstance(transforms, Transform):
            transforms = [transforms]
        if not isinstance(transforms, (list, tuple)):
            raise TypeError("transforms must be a list of shardkit transforms, not "
                            f"{type(transforms).__name__}")
        flat = []
        for t in transforms:
            if isinstance(t, Compose):
                flat.extend(t.transforms)
            elif isinstance(t, Transform):
                flat.append(t)
            else:
                raise TypeError(
                    f"transform must hold shardkit transforms (they run in C), not "
                    f"{type(t).__module__}.{type(t).__qualname__}")
        if len(flat) > _native.MAX_STEPS:
            raise ValueError(f"transform: {len(flat)} steps, at most {_native.MAX_STEPS}")
        self.transforms = flat
        self._cache = {}

    def _steps(self):
        return [s for t in self.transforms for s in t._steps()]

    def _repr_args(self):
        return [("transforms", self.transforms)]

    @property
    def normalizes(self):
        return any(isinstance(t, Normalize) for t in self.transforms)

    def _augment(self, layout="NHWC", dtype=None):
        """The C transform list for an output format (checked, cached)."""
        if dtype is None:
            dtype = "float32" if self.normalizes else "uint8"
        if layout not in _LAYOUTS:
            raise ValueError(f"layout must be 'NHWC' or 'NCHW', not {layout!r}")
        if dtype not in _DTYPES:
            raise ValueError(f"dtype must be 'uint8', 'float32' or 'float16', not {dtype!r}")
        if dtype == "uint8" and self.normalizes:
            raise ValueError("dtype: Normalize gives float values; pass dtype='float32' or "
                             "'float16'")
        key = (layout, dtype)
        if key not in self._cache:
            self._cache[key] = _native.Augment(self._steps(), layout, dtype)
        return self._cache[key]

    def output_size(self):
        """(height, width) when every output has that size, else None."""
        return self._augment().fixed_size()

    def __call__(self, image, *, seed=0, epoch=0, index=0, layout="NHWC", dtype=None):
        """Apply to one image (numpy uint8, height x width x 3, or anything
        numpy.asarray turns into one, e.g. a PIL image) with the random
        choices of sample `index` in `epoch` with `seed`."""
        array = np.ascontiguousarray(np.asarray(image))
        if array.dtype != np.uint8 or array.ndim != 3 or array.shape[2] != 3:
            raise ValueError("image must be uint8 of shape (height, width, 3), not "
                             f"{array.dtype} {array.shape}")
        return np.asarray(self._augment(layout, dtype).apply(array, seed, epoch, index))

    def draw(self, width, height, *, seed=0, epoch=0, index=0):
        """The random choices for an input of width x height: one dict per
        step (box, flip, sizes); pixels are not touched."""
        return list(self._augment().draw(_check_int(width, "width", maximum=U32_MAX),
                                         _check_int(height, "height", maximum=U32_MAX),
                                         seed, epoch, index))


def compose(transform):
    """A Compose from what Loader(transform=...) accepts: None, a transform,
    a list of them or a Compose."""
    if transform is None:
        return None
    if isinstance(transform, Compose):
        return transform
    return Compose(transform)
