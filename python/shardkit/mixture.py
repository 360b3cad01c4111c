"""Mixture: several datasets read as one, each sample drawn from a source by
weight (the C library's shard_mixture, include/shardkit/mixture.h)."""
import math
import os
from collections.abc import Sequence
from typing import Any, Literal

from shardkit import _native
from shardkit.dataset import Dataset, Location, _reopen
from shardkit.transforms import _check_int

Rule = Literal["replace", "stop_on_shortest", "stop_on_longest"]
LabelSpace = Literal["own", "merged"]
# The format of Mixture.manifest.
MANIFEST_FORMAT = "shardkit.Mixture/1"


class Mixture:
    """A weighted mixture of datasets: its sources, read by ``Loader`` (and
    ``shardkit.torch.ShardIterableDataset``) wherever a Dataset goes.

    ``Mixture(sources, weights=None, *, epoch_size=None, rule="replace",
    labels="own")``

    - sources: Datasets or their locations (the same one may come twice).
    - weights: one per source, finite and above 0, taken relative to their
      sum; None: the sources' sizes (every sample equally likely).
    - An epoch has ``len(mixture)`` entries, of which source s gives exactly
      ``quotas[s]`` (its weight's share, within one), drawn sample by sample
      by weight from the seed: the same seed and epoch give the same epoch.
      A source is visited without repeats until its pass (a shuffled order
      of all its samples) is exhausted; then ``rule`` says: ``"replace"``
      (an epoch of ``epoch_size`` entries, default every source's samples
      in all; a source past its pass starts a new one in a new order:
      upsampled), ``"stop_on_shortest"`` (the epoch ends as the first
      source runs out: nothing repeats) or ``"stop_on_longest"`` (it ends
      once every source has been visited whole, the others upsampled); with
      a stop rule ``epoch_size`` is at most the epoch.  A source whose
      weight is below its size's share sees a different part of itself
      every epoch.
    - labels: ``"own"`` (a batch's labels are each source's own numbers;
      ``batch.sources`` says whose) or ``"merged"`` (the sources' class
      names merged by name into ``mixture.labels``, sorted as a manifest's
      are, and each sample's label numbered in it; ``label_map[s][k]`` is
      the number of source s's class k, and ``manifest`` records both).

    A Loader's batch gives each sample's source (``batch.sources``) and its
    index in that source (``batch.indices``).  Ranks split each epoch as
    they split a dataset's (the same ``remainder`` rules), and a
    ``state_dict()`` restores the mixture's position exactly, also on
    another number of ranks.  A mixture's Loader carries no ``fields``.
    Raises ValueError naming the source for a bad weight or an empty
    source."""

    def __init__(self, sources: Sequence[Dataset | Location],
                 weights: Sequence[float] | None = None, *, epoch_size: int | None = None,
                 rule: Rule = "replace", labels: LabelSpace = "own") -> None:
        if isinstance(sources, (str, bytes, os.PathLike)) or not isinstance(sources, Sequence):
            raise TypeError(f"sources must be a list of Datasets or locations, not "
                            f"{type(sources).__name__}")
        opened: list[Dataset] = []
        for s in sources:
            if isinstance(s, Dataset):
                opened.append(s)
            elif isinstance(s, (str, bytes, os.PathLike)):
                opened.append(Dataset(s))
            else:
                raise TypeError(f"sources must be Datasets or locations, not "
                                f"{type(s).__name__}")
        if weights is None:
            given = [float(len(d)) for d in opened]
        else:
            if isinstance(weights, (str, bytes)) or not isinstance(weights, Sequence):
                raise TypeError(f"weights must be a list of numbers, not "
                                f"{type(weights).__name__}")
            given = []
            for i, w in enumerate(weights):
                if isinstance(w, bool) or not isinstance(w, (int, float)):
                    raise TypeError(f"weights[{i}] must be a number, not {type(w).__name__}")
                given.append(float(w))
            if len(given) != len(opened):
                raise ValueError(f"{len(given)} weights for {len(opened)} sources")
        for i, w in enumerate(given):
            if not (math.isfinite(w) and w > 0):
                raise ValueError(f"the weight of source {i} is {w}: weights must be finite and "
                                 "above 0")
        if rule not in ("replace", "stop_on_shortest", "stop_on_longest"):
            raise ValueError(f"rule must be 'replace', 'stop_on_shortest' or 'stop_on_longest', "
                             f"not {rule!r}")
        if labels not in ("own", "merged"):
            raise ValueError(f"labels must be 'own' or 'merged', not {labels!r}")
        size = 0 if epoch_size is None else _check_int(epoch_size, "epoch_size")
        self.sources = opened
        self.rule: Rule = rule
        self.label_space: LabelSpace = labels
        self._given = given
        self._epoch_size = epoch_size
        self._native = _native.Mixture([d._native for d in opened], given, rule, size, labels)
        shares = self._native.sources()
        self.weights = [w for w, _ in shares]
        self.quotas = [q for _, q in shares]
        names, maps = self._native.labels()
        self.labels: list[str] | None = list(names) if labels == "merged" else None
        self.label_map: list[list[int]] | None = (
            [list(m) for m in maps] if maps is not None else None)

    def __len__(self) -> int:
        """Entries per epoch (all ranks')."""
        return self._native.epoch_size()

    @property
    def manifest(self) -> dict[str, Any]:
        """What the mixture is, as plain values: its sources (location,
        manifest_xxh3, samples, weight relative to the sum, entries per
        epoch), rule, epoch size and label space, and with merged labels the
        class names and each source's map into them."""
        out: dict[str, Any] = {
            "format": MANIFEST_FORMAT, "rule": self.rule, "epoch_size": len(self),
            "labels": self.label_space,
            "sources": [{"location": os.fsdecode(d.location), "manifest_xxh3": d.manifest_xxh3,
                         "samples": len(d), "weight": w, "quota": q}
                        for d, w, q in zip(self.sources, self.weights, self.quotas)]}
        if self.labels is not None:
            out["label_names"] = list(self.labels)
            out["label_map"] = [list(m) for m in self.label_map or []]
        return out

    def _identity(self) -> dict[str, Any]:
        """What a Loader's state must agree on: the manifest but where the
        sources are (a dataset moved elsewhere is the same data)."""
        manifest = self.manifest
        for source in manifest["sources"]:
            del source["location"]
        return manifest

    @property
    def cache_warning(self) -> str:
        """The first source's node-local cache warning that is not empty, or ""."""
        return next((d.cache_warning for d in self.sources if d.cache_warning), "")

    def _stats(self) -> dict[str, int]:
        """The sources' read counters, summed (a dataset given twice counts once)."""
        total: dict[str, int] = {}
        for d in {id(d): d for d in self.sources}.values():
            for k, v in d._native.stats().items():
                total[k] = total.get(k, 0) + v
        return total

    def __reduce__(self) -> tuple[Any, ...]:
        # picklable (DataLoader workers): the sources reopened by location
        return (_remix, ([(d.location, d.options) for d in self.sources], self._given,
                         self._epoch_size, self.rule, self.label_space))

    def __repr__(self) -> str:
        parts = ", ".join(f"{d!r}: {w:.3g}" for d, w in zip(self.sources, self.weights))
        return (f"Mixture({{{parts}}}, epoch_size={len(self)}, rule={self.rule!r}, "
                f"labels={self.label_space!r})")


def _remix(sources: list[tuple[Any, Any]], weights: list[float], epoch_size: int | None,
           rule: Rule, labels: LabelSpace) -> Mixture:
    return Mixture([_reopen(location, options) for location, options in sources], weights,
                   epoch_size=epoch_size, rule=rule, labels=labels)
