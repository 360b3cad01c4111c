"""Library errors in Python: one ShardkitError subclass per status code of
include/shardkit/error.h, each also the builtin it resembles; real failures
raise them; messages and file names with bytes that are not UTF-8."""
import errno
import json
import os
import pickle
import re

import pytest

import shardkit
from conftest import damaged
from shardkit import _native

# enum shard_status (include/shardkit/error.h), read from the header: a code
# added there without a class here fails the test below
HEADER = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "include", "shardkit", "error.h")

EXPECTED = {  # status name -> (class, the builtin it must also be)
    "SHARD_ENOMEM": (shardkit.OutOfMemoryError, MemoryError),
    "SHARD_EIO": (shardkit.StorageError, OSError),
    "SHARD_EINVAL": (shardkit.InvalidArgumentError, ValueError),
    "SHARD_ECORRUPT": (shardkit.CorruptDatasetError, OSError),
    "SHARD_EUNSUPPORTED": (shardkit.UnsupportedError, ValueError),
    "SHARD_ELIMIT": (shardkit.LimitError, ValueError),
    "SHARD_ENOTIMAGE": (shardkit.CorruptDatasetError, OSError),
    "SHARD_ELOCKED": (shardkit.LockedError, BlockingIOError),
    "SHARD_EEXIST": (shardkit.ExistsError, FileExistsError),
    "SHARD_EMISMATCH": (shardkit.MismatchError, ValueError),
    "SHARD_ENOTFOUND": (shardkit.NotFoundError, FileNotFoundError),
    "SHARD_ENET": (shardkit.NetworkError, ConnectionError),
    "SHARD_EINTR": (shardkit.RunInterruptedError, InterruptedError),
    "SHARD_EREJECTED": (shardkit.RejectedInputError, ValueError),
}


def status_codes():
    """{name: value} of enum shard_status."""
    with open(HEADER) as f:
        text = f.read()
    body = text[text.index("enum shard_status {"):text.index("};", text.index("enum shard_status"))]
    return {m.group(1): int(m.group(2))
            for m in re.finditer(r"(SHARD_E[A-Z]+)\s*=\s*(-?\d+)", body)}


def raised(code, message=b"cannot read 'x'", *filename):
    with pytest.raises(shardkit.ShardkitError) as e:
        _native._raise_library_error(code, message, *filename)
    return e.value


def test_every_status_code_has_its_class_and_builtin():
    codes = status_codes()
    assert set(codes) == set(EXPECTED), "a status code without an expected class"
    for name, code in codes.items():
        cls, builtin = EXPECTED[name]
        e = raised(code)
        assert type(e) is cls, name
        assert isinstance(e, shardkit.ShardkitError) and isinstance(e, builtin), name
        assert e.code == code and str(e) == "cannot read 'x'", name
        # caught by the builtin alone, as code that knows nothing of shardkit does
        with pytest.raises(builtin):
            _native._raise_library_error(code, b"m")
        copy = pickle.loads(pickle.dumps(e))  # DataLoader workers send them back
        assert type(copy) is cls and copy.code == code and str(copy) == str(e), name


def test_an_unknown_code_is_a_plain_shardkit_error():
    e = raised(-99)
    assert type(e) is shardkit.ShardkitError and e.code == -99


def test_not_found_carries_errno_and_the_filename_given():
    for filename in ("/data/set", b"/data/\xe9t\xe9"):
        e = raised(status_codes()["SHARD_ENOTFOUND"], b"no manifest", filename)
        assert (e.errno, e.filename, str(e)) == (errno.ENOENT, filename, "no manifest")


def test_a_message_with_bytes_that_are_not_utf8_reads_them_as_escapes():
    e = raised(status_codes()["SHARD_EIO"], b"cannot open '/d/\xe9t\xe9/a.shard'")
    assert str(e) == "cannot open '/d/\\xe9t\\xe9/a.shard'"


@pytest.mark.parametrize("as_bytes", [True, False], ids=["bytes", "fsdecoded-str"])
def test_a_missing_non_utf8_path_is_file_not_found_naming_it(tmp_path, as_bytes):
    path = os.fsencode(tmp_path) + b"/no-\xe9t\xe9"
    given = path if as_bytes else os.fsdecode(path)
    with pytest.raises(FileNotFoundError) as e:
        shardkit.Dataset(given)
    assert isinstance(e.value, shardkit.NotFoundError)
    assert e.value.errno == errno.ENOENT and e.value.filename == given
    assert "\\xe9t\\xe9" in str(e.value)


def test_a_dataset_under_a_non_utf8_directory_opens_by_bytes_and_by_str(labelled, tmp_path):
    folder = os.fsencode(tmp_path) + b"/\xe9t\xe9"
    os.symlink(labelled, folder)
    by_bytes = shardkit.Dataset(folder)
    by_str = shardkit.Dataset(os.fsdecode(folder))
    assert len(by_bytes) == len(by_str) == len(shardkit.Dataset(labelled)) == 62
    assert by_bytes[5].key == by_str[5].key


def test_real_failures_raise_the_classes(labelled, tmp_path):
    with pytest.raises(shardkit.NotFoundError):
        shardkit.Dataset(str(tmp_path / "none"))
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "manifest.json").write_text("{")
    with pytest.raises(shardkit.CorruptDatasetError) as e:
        shardkit.Dataset(str(bad))
    assert isinstance(e.value, OSError) and e.value.code == -4
    newer = tmp_path / "newer"
    newer.mkdir()
    with open(os.path.join(labelled, "manifest.json")) as f:
        manifest = json.load(f)
    manifest["version"] = 99
    (newer / "manifest.json").write_text(json.dumps(manifest))
    damaged(newer)
    with pytest.raises(shardkit.UnsupportedError) as e:
        shardkit.Dataset(str(newer))
    assert isinstance(e.value, ValueError) and "version" in str(e.value)
    # the library's own argument check (threads 0..1024)
    with pytest.raises(shardkit.InvalidArgumentError, match="threads") as e:
        shardkit.Loader(labelled, 4, threads=5000)
    assert isinstance(e.value, ValueError)
