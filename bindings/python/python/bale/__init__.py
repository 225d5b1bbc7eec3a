"""bale: a crash-safe single-file B+-tree store (bytes keys, bytes values).

    import bale
    with bale.Tree.open("assets.bale", create=True) as t:
        t[b"k"] = b"v"                    # one durable transaction
        with t.write() as txn:            # commit on success, roll back on error
            txn[b"a"] = b"1"
            txn.put_stream(b"blob", open("big.bin", "rb"))
        with t.read() as snap:            # a consistent snapshot
            for k, v in snap.items(prefix=b"a"):
                ...
        f = t.open_value(b"blob")         # seekable read-only binary file
"""

from collections.abc import Mapping as _Mapping
from collections.abc import MutableMapping as _MutableMapping

from ._bale import (
    ERROR_CODES,
    FORMAT_VERSION,
    CheckReport,
    CompactReport,
    Cursor,
    RangeIterator,
    Snapshot,
    Stat,
    Transaction,
    Tree,
    ValueView,
    __version__,
)
from ._support import (
    BaleError,
    ChecksumMismatchError,
    ClosedError,
    ConflictError,
    CorruptError,
    InvalidArgumentError,
    InvalidTypeError,
    IoError,
    LockedError,
    NotABaleFileError,
    NotFoundError,
    TooLargeError,
    UnsupportedVersionError,
    ValueFile,
)
from ._views import ItemsView, KeysView, ValuesView

_MutableMapping.register(Tree)
_MutableMapping.register(Transaction)
_Mapping.register(Snapshot)

__all__ = [
    "Tree",
    "Snapshot",
    "Transaction",
    "RangeIterator",
    "Cursor",
    "ValueFile",
    "ValueView",
    "KeysView",
    "ValuesView",
    "ItemsView",
    "Stat",
    "CheckReport",
    "CompactReport",
    "FORMAT_VERSION",
    "ERROR_CODES",
    "__version__",
    "BaleError",
    "NotFoundError",
    "CorruptError",
    "ChecksumMismatchError",
    "UnsupportedVersionError",
    "NotABaleFileError",
    "LockedError",
    "InvalidArgumentError",
    "InvalidTypeError",
    "TooLargeError",
    "ConflictError",
    "ClosedError",
    "IoError",
]
