"""shardkit without torch, and shardkit.torch.ShardIterableDataset under
torch's DataLoader: one Batch per item, exactly once per epoch across ranks
and workers, the same batches in the same order as shardkit.Loader, and a
state restored with another number of workers, and of ranks."""
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
                                        transform=[shardkit.CenterCrop(24)], threads=1)
            data.set_epoch(epoch)
            got = list(DataLoader(data, batch_size=None, num_workers=num_workers))
            assert len(got) == len(data)
            reference = shardkit.Loader(labelled, 4, seed=3, rank=rank, world_size=world_size,
                                        transform=[shardkit.CenterCrop(24)], threads=1,
                                        output="torch")
            reference.set_epoch(epoch)
            for batch, want in zip(got, reference):
                assert isinstance(batch, shardkit.Batch)
                images, labels = batch  # one Batch, unpacking as images, labels
                assert torch.equal(images, want.images) and torch.equal(labels, want.labels)
                assert (batch.indices == want.indices).all()
                assert (batch.epoch, batch.number) == (want.epoch, want.number)
                assert images.shape[1:] == (24, 24, 3)
                assert batch.keys == want.keys  # the dataset reopened in this process
                union.extend(batch.indices.tolist())
        assert sorted(union) == list(range(62)), (epoch, num_workers, world_size)


def test_set_epoch_reaches_persistent_workers(labelled):
    pytest.importorskip("torch")
    from torch.utils.data import DataLoader
    from shardkit.torch import ShardIterableDataset
    data = ShardIterableDataset(labelled, 8, seed=1, threads=1)
    loader = DataLoader(data, batch_size=None, num_workers=2, persistent_workers=True)
    orders = []
    for epoch in range(2):
        data.set_epoch(epoch)
        orders.append([i for b in loader for i in b.indices.tolist()])
    for epoch, order in enumerate(orders):
        reference = shardkit.Loader(labelled, 8, seed=1, threads=1)
        reference.set_epoch(epoch)
        assert order == [int(i) for b in reference for i in b.indices]
    assert orders[0] != orders[1]


@pytest.mark.parametrize("before, after", [(2, 0), (0, 3), (2, 3)])
def test_a_state_restores_with_another_number_of_workers(labelled, before, after):
    pytest.importorskip("torch")
    from torch.utils.data import DataLoader
    from shardkit.torch import ShardIterableDataset
    options = dict(seed=5, transform=[shardkit.CenterCrop(16)], threads=1)
    whole = [b.indices.tolist() for b in shardkit.Loader(labelled, 5, **options)]
    data = ShardIterableDataset(labelled, 5, **options)
    taken = []
    for batch in DataLoader(data, batch_size=None, num_workers=before):
        taken.append(batch.indices.tolist())
        if len(taken) == 4:
            state = data.state_dict(batch)
            break
    assert state["batch"] == 4 and taken == whole[:4]
    again = ShardIterableDataset(labelled, 5, **options)
    again.load_state_dict(state)
    assert len(again) == len(whole) - 4
    rest = [b.indices.tolist() for b in DataLoader(again, batch_size=None, num_workers=after)]
    assert rest == whole[4:]
    # the same state restores a Loader, and the next epoch is whole again
    loader = shardkit.Loader(labelled, 5, **options)
    loader.load_state_dict(state)
    assert [b.indices.tolist() for b in loader] == whole[4:]
    again.set_epoch(1)
    assert len(again) == len(whole)


def test_a_state_taken_on_two_ranks_resumes_on_three_with_workers(labelled):
    pytest.importorskip("torch")
    from torch.utils.data import DataLoader
    from shardkit.torch import ShardIterableDataset
    options = dict(seed=8, transform=[shardkit.CenterCrop(16)], threads=1)
    seen, states = [], []
    for rank in range(2):  # two ranks in lockstep, stopped after 3 batches of 4
        data = ShardIterableDataset(labelled, 4, rank=rank, world_size=2, **options)
        it = iter(DataLoader(data, batch_size=None, num_workers=2))
        for _ in range(3):
            batch = next(it)
            seen += batch.indices.tolist()
        states.append(data.state_dict(batch))
        del it
    rest = []
    for rank in range(3):  # any rank's state says where all are
        data = ShardIterableDataset(labelled, 6, rank=rank, world_size=3, **options)
        data.load_state_dict(states[rank % 2])
        got = [b for b in DataLoader(data, batch_size=None, num_workers=rank)]
        assert len(got) == len(data)
        rest.append([i for b in got for i in b.indices.tolist()])
    # every sample not seen before the stop exactly once; pad's fillers seen before
    unseen = set(range(62)) - set(seen)
    flat = [i for r in rest for i in r]
    assert sorted(i for i in flat if i in unseen) == sorted(unseen)
    assert all(i in seen for i in flat if i not in unseen)
    assert len({len(r) for r in rest}) == 1  # every new rank the same count


def test_shard_iterable_dataset_checks_its_arguments(labelled):
    pytest.importorskip("torch")
    from shardkit.torch import ShardIterableDataset
    with pytest.raises(ValueError, match="batch_size"):
        ShardIterableDataset(labelled, 0)
    with pytest.raises(TypeError, match="output"):
        ShardIterableDataset(labelled, 4, output="numpy")
    with pytest.raises(TypeError, match="return_indices"):
        ShardIterableDataset(labelled, 4, return_indices=True)
    with pytest.raises(ValueError, match="remainder"):
        ShardIterableDataset(labelled, 4, remainder="evenly")
    with pytest.raises(FileNotFoundError):
        ShardIterableDataset(labelled + "-missing", 4)
