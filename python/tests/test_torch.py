"""shardkit without torch, and shardkit.torch.ShardIterableDataset under
torch's DataLoader: exactly once per epoch across ranks and workers, and the
same batches in the same order as shardkit.Loader."""
import subprocess
import textwrap

import pytest

import shardkit
from conftest import PYTHON, subprocess_env

BLOCK_TORCH = """
import sys
class NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ImportError(f"{name} is blocked by this test")
sys.meta_path.insert(0, NoTorch())
"""


def test_import_shardkit_works_without_torch(labelled):
    code = BLOCK_TORCH + textwrap.dedent(f"""
        import shardkit
        loader = shardkit.Loader({labelled!r}, 8, threads=1,
                                 transform=[shardkit.CenterCrop(16)])
        assert sum(len(b) for b in loader) == 62
        try:
            shardkit.Loader({labelled!r}, 8, output="torch")
        except ModuleNotFoundError as e:
            assert "torch" in str(e)
        else:
            raise AssertionError("output='torch' worked without torch")
        try:
            import shardkit.torch
        except ImportError:
            pass
        else:
            raise AssertionError("shardkit.torch imported without torch")
        assert "torch" not in sys.modules
        print("ok")
    """)
    out = subprocess.run([PYTHON, "-c", code], env=subprocess_env(), check=True,
                         capture_output=True, text=True).stdout
    assert out.strip() == "ok"


@pytest.mark.parametrize("num_workers", [0, 2])
@pytest.mark.parametrize("world_size", [1, 2])
def test_dataloader_workers_read_each_sample_once_in_loader_order(labelled, num_workers,
                                                                  world_size):
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader
    from shardkit.torch import ShardIterableDataset
    for epoch in range(2):
        union = []
        for rank in range(world_size):
            data = ShardIterableDataset(labelled, 4, seed=3, rank=rank, world_size=world_size,
                                        transform=[shardkit.CenterCrop(24)], threads=1,
                                        return_indices=True)
            data.set_epoch(epoch)
            got = [(images, labels, indices) for images, labels, indices in
                   DataLoader(data, batch_size=None, num_workers=num_workers)]
            assert len(got) == len(data)
            reference = shardkit.Loader(labelled, 4, seed=3, rank=rank, world_size=world_size,
                                        transform=[shardkit.CenterCrop(24)], threads=1,
                                        output="torch")
            reference.set_epoch(epoch)
            for (images, labels, indices), batch in zip(got, reference):
                assert torch.equal(indices, torch.from_numpy(batch.indices))
                assert torch.equal(images, batch.images) and torch.equal(labels, batch.labels)
                assert images.shape[1:] == (24, 24, 3)
                union.extend(indices.tolist())
        assert sorted(union) == list(range(62)), (epoch, num_workers, world_size)


def test_set_epoch_reaches_persistent_workers(labelled):
    pytest.importorskip("torch")
    from torch.utils.data import DataLoader
    from shardkit.torch import ShardIterableDataset
    data = ShardIterableDataset(labelled, 8, seed=1, threads=1, return_indices=True)
    loader = DataLoader(data, batch_size=None, num_workers=2, persistent_workers=True)
    orders = []
    for epoch in range(2):
        data.set_epoch(epoch)
        orders.append([i for _, _, idx in loader for i in idx.tolist()])
    for epoch, order in enumerate(orders):
        reference = shardkit.Loader(labelled, 8, seed=1, threads=1)
        reference.set_epoch(epoch)
        assert order == [int(i) for b in reference for i in b.indices]
    assert orders[0] != orders[1]


def test_shard_iterable_dataset_checks_its_arguments(labelled):
    pytest.importorskip("torch")
    from shardkit.torch import ShardIterableDataset
    with pytest.raises(ValueError, match="batch_size"):
        ShardIterableDataset(labelled, 0)
    with pytest.raises(TypeError, match="output"):
        ShardIterableDataset(labelled, 4, output="numpy")
    with pytest.raises(FileNotFoundError):
        ShardIterableDataset(labelled + "-missing", 4)
