"""Calls the types refuse: test_types runs mypy over this file and expects an
error on each line whose comment says "error:" and a part of mypy's message, and on no
other line.  Without the package's types every call would pass as Any."""
import shardkit
from shardkit import _native
from shardkit.torch import ShardIterableDataset

ds = shardkit.Dataset(3)  # error: incompatible type "int"
label: str = ds[0].label  # error: incompatible types in assignment
shardkit.Loader(ds, 8, layout="NWHC")  # error: incompatible type "Literal['NWHC']"
shardkit.Loader(ds, "8")  # error: incompatible type "str"
shardkit.Loader(ds, 8, batch=3)  # error: Unexpected keyword argument "batch"
shardkit.RandomHorizontalFlip(p="half")  # error: incompatible type "str"
shardkit.Compose(shardkit.Resize(32)).draw(10, 10, seed=None)  # error: incompatible type "None"
ds.index_of(7)  # error: incompatible type "int"
shardkit.Dataset("x", connections="8")  # error: incompatible type "str"
shardkit.Dataset("x", timeout="2s")  # error: incompatible type "str"
shardkit.Dataset("x", cache_limit="1G")  # error: incompatible type "str"
shardkit.Dataset("x", 8)  # error: Too many positional arguments
shardkit.Dataset("x", window_bytes=1 << 20)  # error: Unexpected keyword argument "window_bytes"
retries: str = ds.options["retries"]  # error: incompatible types in assignment
_native.Dataset("x", window_cache="1G")  # error: incompatible type "str"
_native.Dataset("x", cache=1 << 30)  # error: Unexpected keyword argument "cache"
older: int = ds.options["cache"]  # error: TypedDict "ReadingOptions" has no key "cache"
_native.Dataset("x").read("0")  # error: incompatible type "str"
_native.Transforms([("resize", 1.5, 2)])  # error: List item 0 has incompatible type
nothing: int = shardkit.Batch  # error: incompatible types in assignment
shardkit.Mixture([ds], weights=["half"])  # error: List item 0 has incompatible type "str"
shardkit.Mixture([ds], rule="first_exhausted")  # error: incompatible type "Literal['first_exhausted']"
ShardIterableDataset(ds, 8, shufle=False)  # error: Unexpected keyword argument "shufle"
ShardIterableDataset(ds, 8, layout="HWC")  # error: incompatible type "Literal['HWC']"
ShardIterableDataset(ds, 8, seed="1")  # error: incompatible type "str"
ShardIterableDataset(ds, 8, return_indices=True)  # error: Unexpected keyword argument
