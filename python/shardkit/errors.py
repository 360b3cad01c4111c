"""Exceptions raised by shardkit.

Every library error is a ``ShardkitError`` and also an instance of the
builtin exception it resembles, as numpy's AxisError is both a ValueError and
an IndexError: ``except FileNotFoundError`` catches a missing dataset,
``except shardkit.ShardkitError`` catches whatever the library refused.  One
class per library status code (``enum shard_status`` in
include/shardkit/error.h); each instance carries ``code``, that status code:

    ==================  ======================  ============================
    status              class                   also a
    ==================  ======================  ============================
    SHARD_ENOMEM        OutOfMemoryError        MemoryError
    SHARD_EIO           StorageError            OSError (a system call failed)
    SHARD_EINVAL        InvalidArgumentError    ValueError
    SHARD_ECORRUPT,     CorruptDatasetError     OSError (damaged files, as
    SHARD_ENOTIMAGE                             gzip and Pillow report
                                                damaged data)
    SHARD_EUNSUPPORTED  UnsupportedError        ValueError
    SHARD_ELIMIT        LimitError              ValueError
    SHARD_ELOCKED       LockedError             BlockingIOError
    SHARD_EEXIST        ExistsError             FileExistsError
    SHARD_EMISMATCH     MismatchError           ValueError
    SHARD_ENOTFOUND     NotFoundError           FileNotFoundError (.errno
                                                ENOENT, .filename: the
                                                location given)
    SHARD_ENET          NetworkError            ConnectionError
    SHARD_EINTR         RunInterruptedError     InterruptedError
    SHARD_EREJECTED     RejectedInputError      ValueError
    ==================  ======================  ============================

(``code`` is the status's number, the value include/shardkit/error.h
gives its name.)

A damaged sample read by index or by a loader is a ``CorruptRecordError`` (a
CorruptDatasetError) naming its shard, record and key.  Bad arguments found
in Python, before the library is called, are plain ValueError and TypeError
naming the parameter.  Messages are one line; bytes of a path that are not
UTF-8 appear as ``\\xNN``.
"""
import errno as _errno
from typing import Any

from shardkit import _native


class ShardkitError(Exception):
    """A library error (the base of all the classes below); an unknown
    status code raises it as it is."""

    code: int | None = None


class _MessageIsTheText:
    """For the OSError subclasses made with (errno, message, filename): str()
    is the library's message, which names the file already, rather than
    OSError's "[Errno 2] message: 'filename'"."""

    def __str__(self) -> str:
        strerror = getattr(self, "strerror", None)
        return str(strerror) if strerror is not None else super().__str__()


class OutOfMemoryError(ShardkitError, MemoryError):
    """An allocation failed."""


class StorageError(ShardkitError, OSError):
    """A system call on the dataset's files failed (open, read ...)."""


class InvalidArgumentError(ShardkitError, ValueError):
    """The library refused an argument or option value (the message names it)."""


class CorruptDatasetError(ShardkitError, OSError):
    """The dataset's own files are damaged: a manifest, a shard's header,
    footer or trailer that does not parse or contradicts the rest."""


class UnsupportedError(ShardkitError, ValueError):
    """Well-formed but not supported: a newer manifest version, a 12-bit JPEG."""


class LimitError(ShardkitError, ValueError):
    """Exceeds a limit: pixels, bytes, the memory of a batch."""


class LockedError(_MessageIsTheText, ShardkitError, BlockingIOError):
    """Another process holds the destination's lock."""


class ExistsError(_MessageIsTheText, ShardkitError, FileExistsError):
    """The destination holds something that must not be replaced."""


class MismatchError(ShardkitError, ValueError):
    """Verification found a difference."""


class NotFoundError(_MessageIsTheText, ShardkitError, FileNotFoundError):
    """No dataset (or no such file in it) at the location: ``errno`` is
    ENOENT and ``filename`` the location as it was given (str or bytes), a
    URL's user and password replaced by ``***``."""


class NetworkError(ShardkitError, ConnectionError):
    """A remote dataset could not be read (after the reader's retries)."""


class RunInterruptedError(_MessageIsTheText, ShardkitError, InterruptedError):
    """Interrupted on request (a signal); the state is resumable."""


class RejectedInputError(ShardkitError, ValueError):
    """An input was rejected where rejects are not allowed."""


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

    def __init__(self, message: str, *, index: int | None = None, shard: str | None = None,
                 record: int | None = None, key_bytes: bytes | None = None,
                 code: int | None = None) -> None:
        super().__init__(message)
        self.index = index
        self.shard = shard
        self.record = record
        self.key_bytes = key_bytes
        self.key = None if key_bytes is None else key_bytes.decode("utf-8", "surrogateescape")
        self.code = code

    def __reduce__(self) -> tuple[Any, ...]:  # picklable: DataLoader workers send exceptions back
        return (_rebuild_record_error,
                (str(self), self.index, self.shard, self.record, self.key_bytes, self.code))


def _rebuild_record_error(message: str, index: int | None, shard: str | None,
                          record: int | None, key_bytes: bytes | None,
                          code: int | None) -> CorruptRecordError:
    return CorruptRecordError(message, index=index, shard=shard, record=record,
                              key_bytes=key_bytes, code=code)


# enum shard_status (by name: the numbers are the extension's) -> class, and
# the errno of the classes made with one
_CLASS_OF: dict[str, type[ShardkitError]] = {
    "SHARD_ENOMEM": OutOfMemoryError, "SHARD_EIO": StorageError,
    "SHARD_EINVAL": InvalidArgumentError, "SHARD_ECORRUPT": CorruptDatasetError,
    "SHARD_EUNSUPPORTED": UnsupportedError, "SHARD_ELIMIT": LimitError,
    "SHARD_ENOTIMAGE": CorruptDatasetError, "SHARD_ELOCKED": LockedError,
    "SHARD_EEXIST": ExistsError, "SHARD_EMISMATCH": MismatchError,
    "SHARD_ENOTFOUND": NotFoundError, "SHARD_ENET": NetworkError,
    "SHARD_EINTR": RunInterruptedError, "SHARD_EREJECTED": RejectedInputError,
}
_BY_CODE: dict[int, type[ShardkitError]] = {
    getattr(_native, name): cls for name, cls in _CLASS_OF.items()}
_ERRNO: dict[type[ShardkitError], int] = {NotFoundError: _errno.ENOENT, ExistsError: _errno.EEXIST,
          LockedError: _errno.EAGAIN, RunInterruptedError: _errno.EINTR}


def _from_library(code: int, message: str, filename: object = None) -> ShardkitError:
    """The exception for a library error (the extension raises it): the
    class of `code`, with .code set; for the OSError subclasses that have an
    errno (NotFoundError ...), .errno, .strerror (the message) and .filename."""
    cls = _BY_CODE.get(code, ShardkitError)
    if cls in _ERRNO:
        e = cls(_ERRNO[cls], message, filename)
    else:
        e = cls(message)
    e.code = code
    return e
