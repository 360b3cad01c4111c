"""Exceptions raised by shardkit.

Library errors map to Python's own exceptions where one fits: a missing
dataset is FileNotFoundError, a bad argument ValueError or TypeError (the
message names the parameter), an I/O failure OSError, no memory MemoryError.
What is specific to datasets has its own class below; every instance raised
for a library error carries ``code``, the library's status code
(``enum shard_status`` in include/shardkit/error.h).
"""


class ShardkitError(Exception):
    """A library error with no closer Python equivalent (e.g. a limit)."""

    code = None


class CorruptDatasetError(ShardkitError):
    """The dataset's own files are damaged: a manifest, a shard's header,
    footer or trailer that does not parse or contradicts the rest."""


class CorruptRecordError(CorruptDatasetError):
    """One sample's record is damaged (checksum, structure, undecodable or
    unsupported payload).

    Attributes: ``index`` (the sample's position in stored order), ``shard``
    (its shard's file name), ``record`` (its record number in the shard),
    ``key`` (str; bytes that are not UTF-8 are kept as surrogate escapes),
    ``key_bytes`` (the key as stored, or None when the footer itself is
    damaged) and ``code``.  The message names all three:
    ``shard-000000.shard record 12 (key 'a/b.jpg'): zstd: checksum mismatch``.
    """

    def __init__(self, message, *, index=None, shard=None, record=None, key_bytes=None,
                 code=None):
        super().__init__(message)
        self.index = index
        self.shard = shard
        self.record = record
        self.key_bytes = key_bytes
        self.key = None if key_bytes is None else key_bytes.decode("utf-8", "surrogateescape")
        self.code = code

    def __reduce__(self):  # picklable: DataLoader workers send exceptions back
        return (_rebuild_record_error,
                (str(self), self.index, self.shard, self.record, self.key_bytes, self.code))


def _rebuild_record_error(message, index, shard, record, key_bytes, code):
    return CorruptRecordError(message, index=index, shard=shard, record=record,
                              key_bytes=key_bytes, code=code)


class NetworkError(ShardkitError, ConnectionError):
    """A remote dataset could not be read (after the reader's retries)."""
