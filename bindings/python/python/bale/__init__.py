"""bale: a crash-safe single-file B+-tree store (bytes keys, bytes values),
a content-addressed object store, and immutable sorted tables (bitables).

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

    with bale.ObjectStore("objects", create=True) as store:
        oid = store.add(b"content")       # a hex id: the hash of the content
        store.get(oid)
        with store.batch() as b:          # durable together, or not at all
            b.add_file("big.bin")
        store.connect_remote("origin", "s3://bucket/prefix")  # or file:///path
        store.push("origin", refs={"main": oid})   # others pull("origin")

    with bale.BitableWriter("names.bitable") as w:  # keys in ascending order
        w.append(b"a", b"1")
        w.append(b"b", open("big.bin", "rb"))       # streamed
        w.finish()
    with bale.Bitable.open("names.bitable") as t:  # read by any number of threads
        t[b"a"], t.rank(b"b"), list(t.prefix(b"a"))
"""

from collections.abc import Mapping as _Mapping
from collections.abc import MutableMapping as _MutableMapping

from ._bale import (
    BITABLE_FORMAT_VERSION,
    ERROR_CODES,
    FORMAT_VERSION,
    AddTreeReport,
    Bitable,
    BitableCheckReport,
    BitableCursor,
    BitableIterator,
    BitableStats,
    BitableSummary,
    BitableView,
    BitableWriter,
    CheckReport,
    CleanReport,
    CompactReport,
    Cursor,
    ObjectBatch,
    ObjectConfig,
    ObjectIterator,
    ObjectMeta,
    ObjectStats,
    ObjectStore,
    PackReport,
    PullReport,
    PushReport,
    RangeIterator,
    RebuildReport,
    RemoteGcReport,
    RemoteInfo,
    Snapshot,
    Stat,
    Transaction,
    TransferReport,
    Tree,
    UnsortedBitableWriter,
    ValidateReport,
    ValueView,
    __version__,
)
from ._support import (
    BaleError,
    BitableFile,
    BitableProblem,
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
    ObjectFile,
    ObjectProblem,
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
    "ObjectStore",
    "ObjectBatch",
    "ObjectFile",
    "ObjectIterator",
    "ObjectMeta",
    "ObjectStats",
    "ObjectConfig",
    "ObjectProblem",
    "PackReport",
    "ValidateReport",
    "RebuildReport",
    "AddTreeReport",
    "TransferReport",
    "CleanReport",
    "PushReport",
    "PullReport",
    "RemoteGcReport",
    "RemoteInfo",
    "Bitable",
    "BitableWriter",
    "UnsortedBitableWriter",
    "BitableCursor",
    "BitableIterator",
    "BitableFile",
    "BitableView",
    "BitableStats",
    "BitableCheckReport",
    "BitableProblem",
    "BitableSummary",
    "FORMAT_VERSION",
    "BITABLE_FORMAT_VERSION",
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
