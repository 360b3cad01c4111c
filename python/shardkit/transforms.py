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
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from shardkit import _native

if TYPE_CHECKING:
    from shardkit._native import _Choice, _Step

_DTYPES = ("uint8", "float32", "float16", "uint16")
_LAYOUTS = ("NHWC", "NCHW")
# The largest value of the C types integer arguments end in: nothing wraps.
U32_MAX = 2**32 - 1

# An output size: an int (a square, or Resize's shorter side) or (height, width).
Size = int | Sequence[int]


def _check_int(value: object, name: str, minimum: int = 1, maximum: int | None = None) -> int:
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


def _side(value: object, name: str) -> int:
    """An output side: 1..the library's largest (SHARD_TRANSFORMS_MAX_SIDE)."""
    return _check_int(value, name, maximum=_native.MAX_SIDE)


def _size(size: Size, name: str = "size") -> tuple[int, int]:
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


def _numbers(values: Sequence[float], count: int, name: str) -> tuple[float, ...]:
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
        raise TypeError(f"{name} must be a sequence of {count} numbers, not "
                        f"{type(values).__name__}")
    if len(values) != count:
        raise ValueError(f"{name} must have {count} values, not {len(values)}")
    out: list[float] = []
    for v in values:
        # int and float named too: type checkers do not see them as numbers.Real
        if isinstance(v, bool) or not isinstance(v, (int, float, numbers.Real, np.number)):
            raise TypeError(f"{name} must hold numbers, not {type(v).__name__}")
        out.append(float(v))
    return tuple(out)


def _range(values: Sequence[float], name: str) -> tuple[float, float]:
    lo, hi = _numbers(values, 2, name)
    if not 0 < lo <= hi or not math.isfinite(hi):
        raise ValueError(f"{name} must satisfy 0 < first <= second, not {values!r}")
    return lo, hi


def _triple(values: Sequence[float], name: str) -> tuple[float, float, float]:
    a, b, c = _numbers(values, 3, name)
    return a, b, c


class Transform:
    """Base of the transforms: each contributes steps to the C list."""

    def _steps(self) -> "list[_Step]":
        raise NotImplementedError

    def _repr_args(self) -> list[tuple[str, object]]:
        raise NotImplementedError

    def __call__(self, image: npt.ArrayLike, *, seed: int = 0, epoch: int = 0, index: int = 0,
                 layout: str = "NHWC", dtype: str | None = None) -> npt.NDArray[Any]:
        """Apply to one image: see Compose.__call__."""
        return Compose([self])(image, seed=seed, epoch=epoch, index=index, layout=layout,
                               dtype=dtype)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self._repr_args())
        return f"{type(self).__name__}({args})"


class RandomResizedCrop(Transform):
    """A random box of area fraction in `scale` and aspect ratio (w/h) in
    `ratio`, resampled to `size` (int: square; or (height, width)):
    torchvision's get_params (ten tries, then the centre fallback)."""

    def __init__(self, size: Size, scale: Sequence[float] = (0.08, 1.0),
                 ratio: Sequence[float] = (3.0 / 4.0, 4.0 / 3.0)) -> None:
        self.size = _size(size)
        self.scale = _range(scale, "scale")
        self.ratio = _range(ratio, "ratio")

    def _steps(self) -> "list[_Step]":
        h, w = self.size
        return [("random_resized_crop", h, w, self.scale, self.ratio)]

    def _repr_args(self) -> list[tuple[str, object]]:
        return [("size", self.size), ("scale", self.scale), ("ratio", self.ratio)]


class CenterCrop(Transform):
    """The centred box of `size` (int: square; or (height, width)); a smaller
    image is padded with zeros first, as torchvision does."""

    def __init__(self, size: Size) -> None:
        self.size = _size(size)

    def _steps(self) -> "list[_Step]":
        h, w = self.size
        return [("center_crop", h, w)]

    def _repr_args(self) -> list[tuple[str, object]]:
        return [("size", self.size)]


class Resize(Transform):
    """Resample: an int makes the shorter side `size` (the longer one keeps
    the aspect ratio, rounded down); (height, width) gives that size."""

    def __init__(self, size: Size) -> None:
        self.size: int | tuple[int, int]
        if isinstance(size, (list, tuple)) and len(size) == 2:
            self.size = _size(size)
        else:
            self.size = _size(size)[0]

    def _steps(self) -> "list[_Step]":
        if isinstance(self.size, tuple):
            return [("resize", self.size[0], self.size[1])]
        return [("resize", self.size, 0)]

    def _repr_args(self) -> list[tuple[str, object]]:
        return [("size", self.size)]


class RandomHorizontalFlip(Transform):
    """Mirror left-right with probability p."""

    p: float

    def __init__(self, p: float = 0.5) -> None:
        if isinstance(p, bool) or not isinstance(p, (int, float, numbers.Real, np.number)):
            raise TypeError(f"p must be a number, not {type(p).__name__}")
        if not 0.0 <= float(p) <= 1.0:
            raise ValueError(f"p must be in [0, 1], not {p}")
        self.p = float(p)

    def _steps(self) -> "list[_Step]":
        return [("horizontal_flip", self.p)]

    def _repr_args(self) -> list[tuple[str, object]]:
        return [("p", self.p)]


class Normalize(Transform):
    """(x / 255 - mean) / std per channel, in float32: torchvision's
    ToTensor then Normalize, bit for bit.  One mean and std per channel of
    the dataset: 1 (grey), 2 (grey and alpha) or 3 (RGB); RGBA's alpha is
    x / 255 (a fourth mean and std, when given, must be 0 and 1).  Needs a
    float dtype; only flips may follow it."""

    def __init__(self, mean: Sequence[float], std: Sequence[float]) -> None:
        n = len(mean) if hasattr(mean, "__len__") else 0
        if n not in (1, 2, 3, 4) or not hasattr(std, "__len__") or len(std) != n:
            raise ValueError(f"mean and std need one value per channel (1 to 4), not {mean!r} "
                             f"and {std!r}")
        m, sd = _numbers(mean, n, "mean"), _numbers(std, n, "std")
        if n == 4 and (m[3], sd[3]) != (0.0, 1.0):
            raise ValueError("the alpha of rgba is x / 255: its mean and std must be 0 and 1")
        self.channels = n
        self.mean = _triple(tuple(m[:3]) + (0.0,) * (3 - min(n, 3)), "mean")
        self.std = _triple(tuple(sd[:3]) + (1.0,) * (3 - min(n, 3)), "std")
        if any(s == 0 for s in self.std):
            raise ValueError(f"std must not contain 0, not {self.std!r}")

    def _steps(self) -> "list[_Step]":
        return [("normalize", self.mean, self.std)]

    def _repr_args(self) -> list[tuple[str, object]]:
        return [("mean", self.mean), ("std", self.std)]


class Compose(Transform):
    """A list of transforms, applied in order."""

    transforms: list[Transform]

    def __init__(self, transforms: "Transform | list[Transform] | tuple[Transform, ...]") -> None:
        if isinstance(transforms, Transform):
            transforms = [transforms]
        if not isinstance(transforms, (list, tuple)):
            raise TypeError("transforms must be a list of shardkit transforms, not "
                            f"{type(transforms).__name__}")
        flat: list[Transform] = []
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
        self._cache: dict[tuple[str, str], _native.Transforms] = {}

    def _steps(self) -> "list[_Step]":
        return [s for t in self.transforms for s in t._steps()]

    def _repr_args(self) -> list[tuple[str, object]]:
        return [("transforms", self.transforms)]

    @property
    def normalizes(self) -> bool:
        return any(isinstance(t, Normalize) for t in self.transforms)

    def _compiled(self, layout: str = "NHWC", dtype: str | None = None) -> _native.Transforms:
        """The C transform list for an output format (checked, cached)."""
        if dtype is None:
            dtype = "float32" if self.normalizes else "uint8"
        if layout not in _LAYOUTS:
            raise ValueError(f"layout must be 'NHWC' or 'NCHW', not {layout!r}")
        if dtype not in _DTYPES:
            raise ValueError(f"dtype must be 'uint8', 'float32', 'float16' or 'uint16', not "
                             f"{dtype!r}")
        if dtype in ("uint8", "uint16") and self.normalizes:
            raise ValueError("dtype: Normalize gives float values; pass dtype='float32' or "
                             "'float16'")
        key = (layout, dtype)
        if key not in self._cache:
            self._cache[key] = _native.Transforms(self._steps(), layout, dtype)
        return self._cache[key]

    def output_size(self) -> tuple[int, int] | None:
        """(height, width) when every output has that size, else None."""
        return self._compiled().fixed_size()

    def __call__(self, image: npt.ArrayLike, *, seed: int = 0, epoch: int = 0, index: int = 0,
                 layout: str = "NHWC", dtype: str | None = None) -> npt.NDArray[Any]:
        """Apply to one image (numpy uint8, height x width x 3, or anything
        numpy.asarray turns into one, e.g. a PIL image) with the random
        choices of sample `index` in `epoch` with `seed`."""
        array = np.ascontiguousarray(np.asarray(image))
        if array.dtype != np.uint8 or array.ndim != 3 or array.shape[2] != 3:
            raise ValueError("image must be uint8 of shape (height, width, 3), not "
                             f"{array.dtype} {array.shape}")
        return np.asarray(self._compiled(layout, dtype).apply(array, seed, epoch, index))

    def draw(self, width: int, height: int, *, seed: int = 0, epoch: int = 0,
             index: int = 0) -> "list[_Choice]":
        """The random choices for an input of width x height: one dict per
        step (box, flip, sizes); pixels are not touched."""
        return list(self._compiled().draw(_check_int(width, "width", maximum=U32_MAX),
                                         _check_int(height, "height", maximum=U32_MAX),
                                         seed, epoch, index))


# What Loader(transform=...) accepts.
TransformArg = Transform | list[Transform] | tuple[Transform, ...] | None


def compose(transform: TransformArg) -> Compose | None:
    """A Compose from what Loader(transform=...) accepts: None, a transform,
    a list of them or a Compose."""
    if transform is None:
        return None
    if isinstance(transform, Compose):
        return transform
    return Compose(transform)
