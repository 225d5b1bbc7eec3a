"""Type stubs of the extension module `bale._bale` (checked against the
built module by `python -m mypy.stubtest bale`, and by mypy over
tests/python/typing_usage.py).

`Tree`, `Snapshot` and `Transaction` are generic in the key type `K` and
the value type `V` they take and give: `Tree.open` returns a
`Tree[bytes, bytes]`. They are registered at run time as
`collections.abc.MutableMapping` / `Mapping`; `_ReadMapping` and
`_WriteMapping` exist only here, to write the shared methods once.

`ObjectStore` takes ids as `str` (hex, any case) or the raw id bytes
(`_Id`) and returns them as lower-case hex `str`.

`Bitable` and its writers take keys as any bytes-like object and return
`bytes`; a value to write may also be a binary file object or an iterable
of bytes chunks (`_ValueSource`)."""

import os
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping
from pathlib import Path
from types import GenericAlias, TracebackType
from typing import Any, Generic, Literal, SupportsIndex, TypedDict, TypeVar, final, overload

from _typeshed import SupportsKeysAndGetItem, SupportsRead
from typing_extensions import Buffer, Self, Unpack

from ._support import BaleError, BitableFile, BitableProblem, ObjectFile, ObjectProblem, ValueFile
from ._views import ItemsView, KeysView, ValuesView

_T = TypeVar("_T")
_K = TypeVar("_K")
_V = TypeVar("_V")

class _RangeOptions(TypedDict, Generic[_K], total=False):
    """The keyword options of `keys`/`values`/`items` after `start` and
    `stop`: the core's `RangeRequest`
    (core/src/btree/range_request.rs), and `include_stop`. `start` is `gte`
    and `stop` is `lt` (`lte` with `include_stop`); any other name, two
    bounds on one side or a wrong value raise `InvalidArgumentError`, a
    value of the wrong type `InvalidTypeError`; `None` is the same as
    leaving an option out."""

    gt: _K | None
    gte: _K | None
    lt: _K | None
    lte: _K | None
    prefix: _K | None
    reverse: bool | None
    offset: int | None
    limit: int | None
    include_stop: bool | None

class _PrefixOptions(TypedDict, total=False):
    """The range options `Bitable.prefix` takes besides the prefix."""

    gt: Buffer | None
    gte: Buffer | None
    lt: Buffer | None
    lte: Buffer | None
    reverse: bool | None
    offset: int | None
    limit: int | None

class _OpenOptions(TypedDict, total=False):
    """The options of `Tree.open` besides the codecs. Defaults (also for
    `None`): create=False, readonly=False, page_size=4096, durable=True,
    mmap=True, wait=False."""

    create: bool | None
    readonly: bool | None
    page_size: int | None
    durable: bool | None
    mmap: bool | None
    wait: bool | None

_Path = str | os.PathLike[str]
#: An object id: hex digits, or the raw id bytes.
_Id = str | Buffer
#: The codec names that keep bytes, and those that hold any object.
_Bytes = Literal["bytes"] | None
_Objects = Literal["json", "pickle"]
#: What a bitable writer takes as a value: bytes, a binary file object read
#: to its end, or an iterable of bytes chunks (never a `str`).
_ValueSource = Buffer | SupportsRead[Buffer | None] | Iterable[Buffer]
_Compression = Literal["never", "auto", "always"]

__all__ = [
    "FORMAT_VERSION",
    "__version__",
    "ERROR_CODES",
    "_error_for_code",
    "Tree",
    "Snapshot",
    "Transaction",
    "RangeIterator",
    "Cursor",
    "ValueView",
    "ValueReader",
    "Stat",
    "CheckReport",
    "CompactReport",
    "ObjectStore",
    "ObjectBatch",
    "ObjectReader",
    "ObjectIterator",
    "ObjectMeta",
    "ObjectStats",
    "ObjectConfig",
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
    "BITABLE_FORMAT_VERSION",
    "Bitable",
    "BitableWriter",
    "UnsortedBitableWriter",
    "BitableCursor",
    "BitableIterator",
    "BitableReader",
    "BitableView",
    "BitableStats",
    "BitableCheckReport",
    "BitableSummary",
]

FORMAT_VERSION: int
BITABLE_FORMAT_VERSION: int
ERROR_CODES: tuple[str, ...]
__version__: str

def _error_for_code(code: str) -> BaleError: ...
@final
class RangeIterator(Generic[_T]):
    """Keys, values or (key, value) tuples of a key range, in order."""

    def __iter__(self) -> Self: ...
    def __next__(self) -> _T: ...
    def close(self) -> None: ...
    @classmethod
    def __class_getitem__(cls, item: Any) -> GenericAlias: ...

@final
class Cursor(Generic[_K, _V]):
    """A position among the keys of a snapshot or of the write transaction.
    Each move returns the `(key, value)` it lands on, or `None` past an end
    (where the cursor stays: `next()` past the last key keeps giving `None`,
    `prev()` goes back to it). A new cursor's `next()` is `first()`, its
    `prev()` `last()`. In a transaction the moves see its changes, and a
    move from a key that was deleted goes to that key's neighbour."""

    def first(self) -> tuple[_K, _V] | None: ...
    def last(self) -> tuple[_K, _V] | None: ...
    def next(self) -> tuple[_K, _V] | None: ...
    def prev(self) -> tuple[_K, _V] | None: ...
    def seek(self, key: _K, *, before: bool = False) -> tuple[_K, _V] | None:
        """To the first key at or after `key` (py-lmdb's `set_range`); with
        `before=True`, to the last key at or before it."""
    @property
    def key(self) -> _K | None: ...
    @classmethod
    def __class_getitem__(cls, item: Any) -> GenericAlias: ...

@final
class ValueView:
    """A read-only view of one value's bytes from `snap.get(key,
    buffer=True)`: no copy when the value is inline in a memory-mapped
    store (`zero_copy`), else read once. Valid while its snapshot is open;
    every use after raises `ClosedError`. A buffer exported from it
    (`memoryview(view)`) holds the snapshot's pages until released."""

    @property
    def zero_copy(self) -> bool: ...
    def __len__(self) -> int: ...
    def tobytes(self) -> bytes: ...
    def __bytes__(self) -> bytes: ...
    @overload
    def __getitem__(self, index: SupportsIndex, /) -> int: ...
    @overload
    def __getitem__(self, index: slice, /) -> bytes: ...
    def __eq__(self, other: object, /) -> bool: ...
    # The buffer protocol (PEP 688 names it from Python 3.12 on; on 3.11 the
    # slots exist without these names: tests/python/stubtest-allowlist.txt).
    def __buffer__(self, flags: int, /) -> memoryview: ...
    def __release_buffer__(self, buffer: memoryview, /) -> None: ...

class _ReadMapping(Mapping[_K, _V]):
    """The reads every bale mapping has."""

    def __getitem__(self, key: _K, /) -> _V: ...
    @overload
    def get(self, key: _K, default: None = None, *, buffer: Literal[False] = False) -> _V | None: ...
    @overload
    def get(self, key: _K, default: _V, *, buffer: Literal[False] = False) -> _V: ...
    @overload
    def get(self, key: _K, default: _T, *, buffer: Literal[False] = False) -> _V | _T: ...
    # Without arguments, views; with any, range iterators.
    @overload
    def keys(self) -> KeysView[_K]: ...
    @overload
    def keys(self, start: _K | None = None, stop: _K | None = None, **options: Unpack[_RangeOptions[_K]]) -> RangeIterator[_K]: ...
    def __iter__(self) -> RangeIterator[_K]: ...
    @overload
    def values(self) -> ValuesView[_V]: ...
    @overload
    def values(self, start: _K | None = None, stop: _K | None = None, **options: Unpack[_RangeOptions[_K]]) -> RangeIterator[_V]: ...
    def __len__(self) -> int: ...
    @overload
    def items(self) -> ItemsView[_K, _V]: ...
    @overload
    def items(
        self, start: _K | None = None, stop: _K | None = None, **options: Unpack[_RangeOptions[_K]]
    ) -> RangeIterator[tuple[_K, _V]]: ...
    def __contains__(self, key: object, /) -> bool: ...
    @classmethod
    def __class_getitem__(cls, item: Any) -> GenericAlias: ...

class _WriteMapping(_ReadMapping[_K, _V], MutableMapping[_K, _V]):
    """The writes of `Tree` (each call its own transaction) and `Transaction`."""

    def __setitem__(self, key: _K, value: _V, /) -> None: ...
    def put(self, key: _K, value: _V) -> None: ...
    def __delitem__(self, key: _K, /) -> None: ...
    def delete(self, key: _K) -> bool: ...
    @overload
    def pop(self, key: _K, /) -> _V: ...
    @overload
    def pop(self, key: _K, default: _V, /) -> _V: ...
    @overload
    def pop(self, key: _K, default: _T, /) -> _V | _T: ...
    @overload
    def setdefault(self: _WriteMapping[_K, _T | None], key: _K, default: None = None) -> _T | None: ...
    @overload
    def setdefault(self, key: _K, default: _V) -> _V: ...
    def popitem(self) -> tuple[_K, _V]: ...
    def clear(self) -> None: ...
    @overload
    def update(self, items: SupportsKeysAndGetItem[_K, _V] | Iterable[tuple[_K, _V]] | None = None, /) -> None: ...
    @overload
    def update(
        self: _WriteMapping[str, _V],
        items: SupportsKeysAndGetItem[str, _V] | Iterable[tuple[str, _V]] | None = None,
        /,
        **kwargs: _V,
    ) -> None: ...
    def put_stream(self, key: _K, fileobj: Any) -> int: ...

@final
class Tree(_WriteMapping[_K, _V]):
    """An ordered, persistent mapping in one file; each mapping operation is
    its own transaction."""

    # Tree.open: the codecs choose K and V (bytes by default); see
    # _OpenOptions for the other options.
    @overload
    @staticmethod
    def open(path: _Path, *, key_codec: _Bytes = None, value_codec: _Bytes = None, **options: Unpack[_OpenOptions]) -> Tree[bytes, bytes]: ...
    @overload
    @staticmethod
    def open(path: _Path, *, key_codec: Literal["utf8"], value_codec: _Bytes = None, **options: Unpack[_OpenOptions]) -> Tree[str, bytes]: ...
    @overload
    @staticmethod
    def open(path: _Path, *, key_codec: _Bytes = None, value_codec: Literal["utf8"], **options: Unpack[_OpenOptions]) -> Tree[bytes, str]: ...
    @overload
    @staticmethod
    def open(path: _Path, *, key_codec: Literal["utf8"], value_codec: Literal["utf8"], **options: Unpack[_OpenOptions]) -> Tree[str, str]: ...
    @overload
    @staticmethod
    def open(path: _Path, *, key_codec: _Bytes = None, value_codec: _Objects, **options: Unpack[_OpenOptions]) -> Tree[bytes, Any]: ...
    @overload
    @staticmethod
    def open(
        path: _Path, *, key_codec: Literal["utf8"], value_codec: _Objects, **options: Unpack[_OpenOptions]
    ) -> Tree[str, Any]: ...
    @property
    def key_codec(self) -> str: ...
    @property
    def value_codec(self) -> str: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    def __enter__(self) -> Self: ...
    def __exit__(self, *_args: object) -> bool: ...
    @property
    def path(self) -> Path: ...
    @property
    def readonly(self) -> bool: ...
    @property
    def page_size(self) -> int: ...
    @property
    def format_version(self) -> int: ...
    @property
    def max_key_len(self) -> int: ...
    def write(self) -> Transaction[_K, _V]: ...
    def read(self) -> Snapshot[_K, _V]: ...
    def open_value(self, key: _K) -> ValueFile: ...
    def stat(self) -> Stat: ...
    def check(self) -> CheckReport: ...
    def compact(self) -> CompactReport: ...
    def sync(self) -> None: ...

@final
class Snapshot(_ReadMapping[_K, _V]):
    """A consistent read-only view of one commit."""

    @property
    def txn_id(self) -> int: ...
    @property
    def closed(self) -> bool: ...
    def close(self) -> None: ...
    def __enter__(self) -> Self: ...
    def __exit__(self, *_args: object) -> bool: ...
    def open_value(self, key: _K) -> ValueFile: ...
    def cursor(self) -> Cursor[_K, _V]: ...
    # get(key, buffer=True): a ValueView, on a store of bytes values only.
    @overload
    def get(self, key: _K, default: None = None, *, buffer: Literal[False] = False) -> _V | None: ...
    @overload
    def get(self, key: _K, default: _V | _T, *, buffer: Literal[False] = False) -> _V | _T: ...
    @overload
    def get(self: Snapshot[_K, bytes], key: _K, default: _T | None = None, *, buffer: Literal[True]) -> ValueView | _T | None: ...

@final
class Transaction(_WriteMapping[_K, _V]):
    """The write transaction; `with tree.write() as txn:` commits on success
    and rolls back on an exception."""

    @property
    def txn_id(self) -> int: ...
    @property
    def closed(self) -> bool: ...
    def commit(self) -> None: ...
    def rollback(self) -> None: ...
    def __enter__(self) -> Self: ...
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        _exc: BaseException | None,
        _tb: TracebackType | None,
    ) -> bool: ...
    def cursor(self) -> Cursor[_K, _V]: ...

@final
class ValueReader:
    """The engine of `bale.ValueFile`."""

    @property
    def size(self) -> int: ...
    @property
    def closed(self) -> bool: ...
    def tell(self) -> int: ...
    def seek(self, offset: int, whence: int = 0) -> int: ...
    def read(self, size: int = ...) -> bytes: ...
    def readinto(self, buffer: Buffer) -> int: ...
    def close(self) -> None: ...

@final
class Stat:
    """Page, tree and value statistics of the latest commit."""

    @property
    def txn(self) -> int: ...
    @property
    def page_size(self) -> int: ...
    @property
    def file_pages(self) -> int: ...
    @property
    def depth(self) -> int: ...
    @property
    def entries(self) -> int: ...
    @property
    def leaf_pages(self) -> int: ...
    @property
    def branch_pages(self) -> int: ...
    @property
    def fill(self) -> float: ...
    @property
    def inline_value_bytes(self) -> int: ...
    @property
    def large_values(self) -> int: ...
    @property
    def large_value_bytes(self) -> int: ...
    @property
    def large_stored_bytes(self) -> int: ...
    @property
    def large_pages(self) -> int: ...
    @property
    def free_pages(self) -> int: ...
    @property
    def free_list_pages(self) -> int: ...
    @property
    def meta_slot(self) -> int:
        """The meta page (1 or 2) the commit was read from."""
    def to_dict(self) -> dict[str, int | float]: ...

@final
class CheckReport:
    """What `check()` verified and the problems it found."""

    @property
    def txn(self) -> int: ...
    @property
    def pages(self) -> int: ...
    @property
    def entries(self) -> int: ...
    @property
    def large_values(self) -> int: ...
    @property
    def free_pages(self) -> int: ...
    @property
    def meta_slot(self) -> int:
        """The meta page (1 or 2) of the commit checked; a damaged other slot is a problem."""
    @property
    def ok(self) -> bool: ...
    @property
    def problems(self) -> list[tuple[int | None, str]]: ...
    def to_dict(self) -> dict[str, Any]: ...

@final
class CompactReport:
    """File bytes before and after `compact()`, and entries copied."""

    @property
    def bytes_before(self) -> int: ...
    @property
    def bytes_after(self) -> int: ...
    @property
    def entries(self) -> int: ...
    def to_dict(self) -> dict[str, int]: ...

@final
class ObjectStore:
    """A content-addressed object store: a directory (or one file, with
    `single_file=True`) of immutable objects named by the hash of their
    content. Every call releases the GIL; `close()` waits for the calls
    other threads are running on the handle."""

    def __new__(
        cls,
        path: _Path,
        *,
        create: bool = False,
        readonly: bool = False,
        single_file: bool = False,
        hash: Literal["blake3", "sha256", "sha1"] = "blake3",
        compression: Literal["never", "auto", "always"] = "auto",
        chunk_min: int | None = None,
        chunk_avg: int | None = None,
        chunk_max: int | None = None,
        fanout: int | None = None,
        pack_target: int | None = None,
        repair: bool = False,
    ) -> Self:
        """Opens (with `create=True`, creates) the store at `path`. `hash`,
        `compression`, the chunk sizes, `fanout` and `pack_target` choose a
        new store's parameters (`None`: the default); an existing store
        keeps its own (`config`). `repair=True` opens a store whose index is
        lost or damaged, for `rebuild_index()`."""
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    def __enter__(self) -> Self: ...
    def __exit__(self, *_args: object) -> bool: ...
    @property
    def path(self) -> Path: ...
    @property
    def hash(self) -> str: ...
    @property
    def format_version(self) -> int: ...
    @property
    def single_file(self) -> bool: ...
    @property
    def readonly(self) -> bool: ...
    @property
    def index_warning(self) -> str | None:
        """Set when the index may have fallen back to an earlier commit
        (a damaged meta slot): acknowledged objects may be missing from it
        though their records are in the packs or staging files. Opening such
        a store also issues a RuntimeWarning. It stays until `rebuild_index`
        recovers them; until then `pack` keeps staging files, and `clean`
        and `repack` raise `CorruptError`."""
    @property
    def config(self) -> ObjectConfig: ...
    def add(self, data: Buffer) -> str: ...
    def add_file(self, source: _Path | SupportsRead[Buffer | None]) -> str:
        """A path is read by the core; a binary file object is streamed,
        taking the GIL back for each `read`. Nothing is added when `read`
        raises; the exception propagates."""
    def add_many(self, items: Iterable[Buffer]) -> list[str]: ...
    def batch(self, *, packed: bool = False) -> ObjectBatch:
        """With `packed=True`, a directory store's batch writes straight
        into packs, holding the packer lock until it ends."""
    def add_tree(self, root: _Path, *, paths: Tree[Any, Any] | None = None, skip_links: bool = False) -> AddTreeReport:
        """Adds every regular file below `root`; with `paths`, records each
        file's relative path (`/`-separated bytes) there with the raw bytes
        of its id. Links and special files raise `InvalidArgumentError`
        unless `skip_links=True` leaves them out."""
    def export_to(self, dest: ObjectStore, ids: Iterable[_Id] | None = None) -> TransferReport: ...
    def import_from(self, src: ObjectStore, ids: Iterable[_Id] | None = None) -> TransferReport: ...
    def import_dos(self, path: _Path) -> TransferReport:
        """Copies every object of a disk-objectstore container that this
        store lacks, each checked against its SHA-256 key; a `hash="sha256"`
        store keeps the container's ids."""
    def get(self, id: _Id, *, verify: bool = False, remote: str | None = None) -> bytes:
        """With `remote`, an object the store lacks is first fetched from
        that remote."""
    def get_range(self, id: _Id, offset: int, length: int) -> bytes: ...
    def open(self, id: _Id, *, verify: bool = False) -> ObjectFile: ...
    def has(self, id: _Id) -> bool: ...
    def __contains__(self, id: _Id, /) -> bool: ...
    def has_many(self, ids: Iterable[_Id]) -> list[bool]: ...
    def meta(self, id: _Id) -> ObjectMeta: ...
    def ids(self) -> list[str]: ...
    def __iter__(self) -> Iterator[str]: ...
    def __len__(self) -> int: ...
    def get_many(self, ids: Iterable[_Id], *, skip_missing: bool = False) -> ObjectIterator:
        """`(id, content)` in on-disk order, each id once, each object read
        when the iteration reaches it. A missing id raises `NotFoundError`
        before anything is yielded, unless `skip_missing=True` leaves it
        out."""
    def delete(self, ids: Iterable[_Id]) -> int: ...
    def pack(self) -> PackReport: ...
    def repack(self, compression: Literal["never", "auto", "always"] | None = None) -> PackReport: ...
    def validate(self, sample: float = 100.0) -> ValidateReport: ...
    def rebuild_index(self) -> RebuildReport: ...
    def clean(self) -> CleanReport: ...
    def stats(self) -> ObjectStats: ...
    def connect_remote(
        self,
        name: str,
        url: str,
        *,
        endpoint: str | None = None,
        region: str | None = None,
        path_style: bool | None = None,
        grace: float | None = None,
    ) -> None:
        """Records remote `name` at `url` (`s3://bucket/prefix`, or
        `file:///path` for a folder used as a bucket) once the server is
        found to honour conditional writes and the remote is created (or
        an existing one of the same hash joined). `grace`: seconds gc of a
        new remote keeps an unneeded pack (default a day). Nothing is
        recorded when a step fails."""
    def remotes(self) -> dict[str, _RemoteConfig]: ...
    def remove_remote(self, name: str) -> None:
        """Forgets the remote and its cache; the bucket is left as it is."""
    def push(
        self,
        remote: str,
        ids: Iterable[_Id] | None = None,
        *,
        refs: Mapping[str, _Id] | None = None,
        progress: Callable[[int, int], object] | None = None,
        threads: int | None = None,
    ) -> PushReport:
        """Sends what the remote lacks of `ids` (every object when `None`)
        and commits it with `refs` in one conditional write; safe beside
        other pushes and gc anywhere. `progress(packs_sent, packs)`; an
        exception it raises is raised once the push has ended."""
    def pull(
        self,
        remote: str,
        *,
        lazy: bool = False,
        progress: Callable[[int, int], object] | None = None,
        threads: int | None = None,
    ) -> PullReport:
        """Copies every object the store lacks; `lazy=True` reads only the
        manifest and pack indexes, and objects come on demand (`fetch`,
        `get(id, remote=...)`)."""
    def fetch(self, remote: str, ids: Iterable[_Id], *, threads: int | None = None) -> PullReport:
        """Fetches `ids` and what the store lacks under them, by range reads."""
    def remote_info(self, name: str) -> RemoteInfo: ...
    def remote_gc(self, name: str, *, dry_run: bool = False) -> RemoteGcReport:
        """Tombstones packs other packs make redundant, deletes tombstones
        and unnamed packs past the grace period; one gc at a time
        (`LockedError`)."""

class _RemoteConfig(TypedDict):
    """Where a remote is, as `remotes()` gives it."""

    url: str
    endpoint: str | None
    region: str | None
    path_style: bool | None

@final
class ObjectBatch:
    """Adds made durable together: `with store.batch() as b:` commits when
    the block succeeds and discards every add when it raises."""

    def add(self, data: Buffer) -> str: ...
    def add_file(self, source: _Path | SupportsRead[Buffer | None]) -> str: ...
    def commit(self) -> None: ...
    def discard(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    def __enter__(self) -> Self: ...
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        _exc: BaseException | None,
        _tb: TracebackType | None,
    ) -> bool: ...

@final
class ObjectReader:
    """The engine of `bale.ObjectFile`."""

    @property
    def size(self) -> int: ...
    @property
    def id(self) -> str: ...
    @property
    def closed(self) -> bool: ...
    def tell(self) -> int: ...
    def seek(self, offset: int, whence: int = 0) -> int: ...
    def read(self, size: int = ...) -> bytes: ...
    def readinto(self, buffer: Buffer) -> int: ...
    def close(self) -> None: ...

@final
class ObjectIterator:
    """The `(id, content)` pairs of `get_many`, read one at a time; each
    step is a call on the store (`ClosedError` once it is closed), and an
    error is raised again by every later step."""

    def __iter__(self) -> Self: ...
    def __next__(self) -> tuple[str, bytes]: ...
    def __length_hint__(self) -> int: ...

@final
class ObjectMeta:
    """What the store knows of one object."""

    @property
    def id(self) -> str: ...
    @property
    def size(self) -> int: ...
    @property
    def stored_size(self) -> int:
        """Bytes the object's top record takes on disk."""
    @property
    def chunked(self) -> bool: ...
    @property
    def packed(self) -> bool: ...
    @property
    def compressed(self) -> bool: ...
    def to_dict(self) -> dict[str, str | int | bool]: ...

@final
class ObjectStats:
    """Counts and sizes of a whole object store."""

    @property
    def objects(self) -> int: ...
    @property
    def logical_bytes(self) -> int: ...
    @property
    def records(self) -> int: ...
    @property
    def stored_bytes(self) -> int: ...
    @property
    def chunked_objects(self) -> int: ...
    @property
    def chunks(self) -> int: ...
    @property
    def staged_records(self) -> int: ...
    @property
    def compressed_records(self) -> int: ...
    @property
    def unique_bytes(self) -> int:
        """Content bytes stored once each, before compression."""
    @property
    def packs(self) -> int: ...
    @property
    def pack_bytes(self) -> int: ...
    def to_dict(self) -> dict[str, int]: ...

@final
class ObjectConfig:
    """The parameters an object store was created with, and its compression
    policy for new records (which `repack` may change)."""

    @property
    def hash(self) -> str: ...
    @property
    def compression(self) -> str: ...
    @property
    def chunk_min(self) -> int: ...
    @property
    def chunk_avg(self) -> int: ...
    @property
    def chunk_max(self) -> int: ...
    @property
    def fanout(self) -> int: ...
    @property
    def pack_target(self) -> int: ...
    @property
    def store_id(self) -> str: ...
    def to_dict(self) -> dict[str, str | int]: ...

@final
class PackReport:
    """What `pack()` or `repack()` did."""

    @property
    def files_removed(self) -> int: ...
    @property
    def records_moved(self) -> int: ...
    @property
    def bytes_moved(self) -> int: ...
    @property
    def files_in_use(self) -> int:
        """Staging files left alone because a writer still holds them."""
    @property
    def files_kept(self) -> int:
        """Staging files packed but kept until `rebuild_index`: the index may have fallen back."""
    @property
    def entries_dropped(self) -> int: ...
    @property
    def bytes_freed(self) -> int: ...
    @property
    def problems(self) -> list[ObjectProblem]:
        """Files left in place (damaged), or removed (no commit names them)."""
    def to_dict(self) -> dict[str, Any]: ...

@final
class ValidateReport:
    """What `validate()` checked, and the problems it found."""

    @property
    def ok(self) -> bool: ...
    @property
    def objects_checked(self) -> int: ...
    @property
    def records_checked(self) -> int: ...
    @property
    def bytes_checked(self) -> int: ...
    @property
    def unindexed_records(self) -> int:
        """Intact records in packs and staging files with no index entry
        (garbage, or objects a damaged index lost)."""
    @property
    def unindexed_objects(self) -> int: ...
    @property
    def problems(self) -> list[ObjectProblem]: ...
    def to_dict(self) -> dict[str, Any]: ...

@final
class RebuildReport:
    """What `rebuild_index()` found in the packs and staging files."""

    @property
    def records(self) -> int: ...
    @property
    def objects(self) -> int: ...
    @property
    def bad_records(self) -> int: ...
    @property
    def skipped_ranges(self) -> int: ...
    @property
    def problems(self) -> list[ObjectProblem]:
        """Files skipped, and objects left out because a chunk is missing."""
    def to_dict(self) -> dict[str, Any]: ...

@final
class AddTreeReport:
    """What `add_tree()` added and left out."""

    @property
    def files(self) -> int: ...
    @property
    def bytes(self) -> int: ...
    @property
    def dirs(self) -> int: ...
    @property
    def skipped(self) -> list[str]:
        """Relative paths of the links and special files left out."""
    def to_dict(self) -> dict[str, Any]: ...

@final
class TransferReport:
    """What `export_to()`, `import_from()` or `import_dos()` copied."""

    @property
    def objects_copied(self) -> int: ...
    @property
    def bytes_copied(self) -> int: ...
    @property
    def objects_present(self) -> int:
        """Objects the destination had already."""
    def to_dict(self) -> dict[str, int]: ...

@final
class CleanReport:
    """What `clean()` removed, and the index's size before and after."""

    @property
    def files_removed(self) -> int: ...
    @property
    def bytes_freed(self) -> int: ...
    @property
    def index_bytes_before(self) -> int: ...
    @property
    def index_bytes_after(self) -> int: ...
    def to_dict(self) -> dict[str, int]: ...

@final
class PushReport:
    """What `push()` sent and committed."""

    @property
    def objects_sent(self) -> int:
        """Objects the remote lacked (sent whole or in part)."""
    @property
    def objects_present(self) -> int: ...
    @property
    def records_sent(self) -> int: ...
    @property
    def bytes_sent(self) -> int:
        """Bytes of new packs and their indexes."""
    @property
    def revived(self) -> int:
        """Tombstoned packs made live again."""
    @property
    def attempts(self) -> int:
        """Conditional writes of the manifest tried."""
    @property
    def generation(self) -> int:
        """The manifest generation committed."""
    @property
    def packs(self) -> list[str]:
        """Names of the new packs (64 hex digits)."""
    def to_dict(self) -> dict[str, int | list[str]]: ...

@final
class PullReport:
    """What `pull()` or `fetch()` copied; a lazy pull fetches no object."""

    @property
    def objects_fetched(self) -> int: ...
    @property
    def objects_present(self) -> int: ...
    @property
    def records_fetched(self) -> int: ...
    @property
    def reads(self) -> int:
        """Whole packs downloaded, or range reads made."""
    @property
    def bytes_received(self) -> int: ...
    @property
    def generation(self) -> int: ...
    def to_dict(self) -> dict[str, int]: ...

@final
class RemoteGcReport:
    """What `remote_gc()` did, or with `dry_run=True` would do."""

    @property
    def tombstoned(self) -> list[str]: ...
    @property
    def deleted(self) -> list[str]:
        """Tombstoned packs past the grace period, removed."""
    @property
    def orphans_deleted(self) -> list[str]:
        """Packs no manifest named (left by pushes that died), removed."""
    @property
    def bytes_freed(self) -> int: ...
    @property
    def uploads_aborted(self) -> int: ...
    @property
    def generation(self) -> int: ...
    def to_dict(self) -> dict[str, int | list[str]]: ...

@final
class RemoteInfo:
    """A remote's current manifest, and what its packs hold."""

    @property
    def name(self) -> str: ...
    @property
    def url(self) -> str: ...
    @property
    def hash(self) -> str: ...
    @property
    def generation(self) -> int: ...
    @property
    def packs(self) -> int: ...
    @property
    def tombstones(self) -> int: ...
    @property
    def objects(self) -> int: ...
    @property
    def records(self) -> int: ...
    @property
    def bytes(self) -> int:
        """Bytes of the live packs and their indexes."""
    @property
    def tombstoned_bytes(self) -> int: ...
    @property
    def grace(self) -> float:
        """Seconds gc keeps a pack after nothing needs it."""
    @property
    def refs(self) -> dict[str, str]: ...
    def to_dict(self) -> dict[str, str | int | float | dict[str, str]]: ...

@final
class Bitable:
    """An immutable sorted table, opened read-only with `Bitable.open`;
    shared freely among threads (and usable in a child made by `fork`: it
    holds no lock). Build one with `BitableWriter`."""

    @staticmethod
    def open(path: _Path, *, mmap: bool | None = True) -> Bitable:
        """With `mmap=False` pages are read with system calls instead of
        through a memory map (for files another program may truncate)."""
    def close(self) -> None:
        """Drops this handle's reference: later calls raise `ClosedError`;
        cursors, iterators, files and views taken from it keep working."""
    @property
    def closed(self) -> bool: ...
    def __enter__(self) -> Self: ...
    def __exit__(self, *_args: object) -> bool: ...
    @property
    def path(self) -> Path: ...
    @property
    def mapped(self) -> bool: ...
    @property
    def format_version(self) -> int: ...
    @overload
    def get(
        self, key: Buffer, default: None = None, *, max_size: int | None = 1073741824, buffer: Literal[False] = False
    ) -> bytes | None: ...
    @overload
    def get(
        self, key: Buffer, default: _T, *, max_size: int | None = 1073741824, buffer: Literal[False] = False
    ) -> bytes | _T: ...
    @overload
    def get(
        self, key: Buffer, default: _T | None = None, *, max_size: int | None = 1073741824, buffer: Literal[True]
    ) -> BitableView | _T | None:
        """A value longer than `max_size` (`None`: no limit) raises
        `TooLargeError`: stream it with `open_value`. `buffer=True` gives a
        `BitableView`, zero-copy for an inline value of a mapped table."""
    def __getitem__(self, key: Buffer, /) -> bytes: ...
    def __contains__(self, key: Buffer, /) -> bool: ...
    def __len__(self) -> int: ...
    def lower_bound(self, key: Buffer) -> BitableCursor: ...
    def upper_bound(self, key: Buffer) -> BitableCursor: ...
    def find(self, key: Buffer) -> BitableCursor | None: ...
    def rank(self, key: Buffer) -> int: ...
    def select(self, n: int) -> BitableCursor: ...
    def first(self) -> BitableCursor: ...
    def last(self) -> BitableCursor: ...
    def range(
        self, start: Buffer | None = None, stop: Buffer | None = None, **options: Unpack[_RangeOptions[Buffer]]
    ) -> BitableIterator[tuple[bytes, bytes]]:
        """Pairs from `start` (inclusive) to `stop` (exclusive; inclusive
        with `include_stop=True`), with the options of the tree store's
        ranges (`gt`, `gte`, `lt`, `lte`, `prefix`, `reverse`, `offset`,
        `limit`)."""
    def prefix(self, prefix: Buffer, **options: Unpack[_PrefixOptions]) -> BitableIterator[tuple[bytes, bytes]]: ...
    def keys(
        self, start: Buffer | None = None, stop: Buffer | None = None, **options: Unpack[_RangeOptions[Buffer]]
    ) -> BitableIterator[bytes]: ...
    def values(
        self, start: Buffer | None = None, stop: Buffer | None = None, **options: Unpack[_RangeOptions[Buffer]]
    ) -> BitableIterator[bytes]: ...
    def items(
        self, start: Buffer | None = None, stop: Buffer | None = None, **options: Unpack[_RangeOptions[Buffer]]
    ) -> BitableIterator[tuple[bytes, bytes]]: ...
    def __iter__(self) -> BitableIterator[bytes]: ...
    def __reversed__(self) -> BitableIterator[bytes]: ...
    def open_value(self, key: Buffer) -> BitableFile: ...
    def stats(self) -> BitableStats: ...
    def check(self, progress: Callable[[int, int], object] | None = None) -> BitableCheckReport:
        """Problems are reported, not raised; `progress(pages_checked,
        pages)` is called now and then."""

@final
class BitableWriter:
    """Builds a table from pairs appended in strictly ascending key order;
    `finish()` gives it its name, and a build that ends otherwise (also a
    `with` block left without `finish()`) leaves nothing behind."""

    def __new__(
        cls,
        path: _Path,
        *,
        page_size: int | None = 4096,
        align: int | None = 1,
        compression: _Compression | None = "auto",
    ) -> Self: ...
    def append(self, key: Buffer, value: _ValueSource) -> None: ...
    def merge(self, inputs: Iterable[Bitable], *, on_duplicate: Literal["newest", "error"] | None = "newest") -> int:
        """Appends every pair of `inputs` (oldest first); returns how many."""
    def append_tree(self, tree: Tree[Any, Any]) -> int:
        """Appends every pair of the tree's latest commit; returns how many."""
    def finish(self, durable: bool | None = True) -> BitableSummary: ...
    def discard(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    @property
    def path(self) -> Path: ...
    @property
    def max_key_len(self) -> int: ...
    def __len__(self) -> int: ...
    def __enter__(self) -> Self: ...
    def __exit__(
        self,
        _exc_type: type[BaseException] | None,
        _exc: BaseException | None,
        _tb: TracebackType | None,
    ) -> bool: ...

@final
class UnsortedBitableWriter:
    """Builds a table from pairs added in any order, sorted in a memory
    budget; of a key added twice the last one is kept, or with
    `on_duplicate="error"` `finish()` raises."""

    def __new__(
        cls,
        path: _Path,
        *,
        page_size: int | None = 4096,
        align: int | None = 1,
        compression: _Compression | None = "auto",
        memory_budget: int | None = 67108864,
        on_duplicate: Literal["newest", "error"] | None = "newest",
    ) -> Self: ...
    def add(self, key: Buffer, value: _ValueSource) -> None: ...
    def finish(self, durable: bool | None = True) -> BitableSummary: ...
    def discard(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    @property
    def path(self) -> Path: ...
    @property
    def runs(self) -> int: ...
    def __len__(self) -> int: ...
    def __enter__(self) -> Self: ...
    def __exit__(
        self,
        _exc_type: type[BaseException] | None,
        _exc: BaseException | None,
        _tb: TracebackType | None,
    ) -> bool: ...

@final
class BitableCursor:
    """A position in a table: on a pair (`valid`) or past either end. Moves
    return whether they land on a pair."""

    @property
    def valid(self) -> bool: ...
    @property
    def key(self) -> bytes | None: ...
    @property
    def value(self) -> bytes | None: ...
    @property
    def ordinal(self) -> int:
        """The current pair's ordinal; the table's length past either end."""
    def next(self) -> bool: ...
    def prev(self) -> bool: ...
    def seek(self, key: Buffer) -> bool: ...
    def first(self) -> bool: ...
    def last(self) -> bool: ...

@final
class BitableIterator(Generic[_T]):
    """Keys, values or (key, value) tuples of a range of a table."""

    def __iter__(self) -> Self: ...
    def __next__(self) -> _T: ...
    def close(self) -> None: ...
    @classmethod
    def __class_getitem__(cls, item: Any) -> GenericAlias: ...

@final
class BitableReader:
    """The engine of `bale.BitableFile`."""

    @property
    def size(self) -> int: ...
    @property
    def closed(self) -> bool: ...
    def tell(self) -> int: ...
    def seek(self, offset: int, whence: int = 0) -> int: ...
    def read(self, size: int = ...) -> bytes: ...
    def readinto(self, buffer: Buffer) -> int: ...
    def close(self) -> None: ...

@final
class BitableView:
    """A read-only buffer over one value of a table; it keeps the table's
    map open while it (or a buffer exported from it) lives."""

    @property
    def zero_copy(self) -> bool: ...
    def __len__(self) -> int: ...
    def tobytes(self) -> bytes: ...
    def __bytes__(self) -> bytes: ...
    @overload
    def __getitem__(self, index: SupportsIndex, /) -> int: ...
    @overload
    def __getitem__(self, index: slice, /) -> bytes: ...
    def __eq__(self, other: object, /) -> bool: ...
    # The buffer protocol (see ValueView).
    def __buffer__(self, flags: int, /) -> memoryview: ...

@final
class BitableStats:
    """The size, shape and fill of a table."""

    @property
    def entries(self) -> int: ...
    @property
    def page_size(self) -> int: ...
    @property
    def align(self) -> int: ...
    @property
    def depth(self) -> int: ...
    @property
    def leaf_pages(self) -> int: ...
    @property
    def branch_pages(self) -> int: ...
    @property
    def large_values(self) -> int: ...
    @property
    def value_region_bytes(self) -> int: ...
    @property
    def file_bytes(self) -> int: ...
    @property
    def key_bytes(self) -> int: ...
    @property
    def value_bytes(self) -> int: ...
    @property
    def longest_key(self) -> int: ...
    @property
    def leaf_fill(self) -> float: ...
    @property
    def branch_fill(self) -> float: ...
    @property
    def level_pages(self) -> list[int]:
        """Pages per level, leaves first."""
    @property
    def completion(self) -> Literal["durable", "fast", "unknown"]: ...
    def to_dict(self) -> dict[str, int | float | str | list[int]]: ...

@final
class BitableCheckReport:
    """What `check()` verified, and the problems found (none when `ok`)."""

    @property
    def ok(self) -> bool: ...
    @property
    def pages_checked(self) -> int: ...
    @property
    def entries_checked(self) -> int: ...
    @property
    def large_values_checked(self) -> int: ...
    @property
    def problem_count(self) -> int:
        """Problems found in all; `problems` lists the first 1000."""
    @property
    def problems(self) -> list[BitableProblem]: ...
    def to_dict(self) -> dict[str, Any]: ...

@final
class BitableSummary:
    """What a writer's `finish()` reports."""

    @property
    def entries(self) -> int: ...
    @property
    def file_bytes(self) -> int: ...
    @property
    def depth(self) -> int: ...
    def to_dict(self) -> dict[str, int]: ...
