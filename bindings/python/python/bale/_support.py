"""The Python half of bale: the exception classes, ValueFile, ObjectFile,
BitableFile, ObjectProblem and BitableProblem (exported by the package, whose
``__all__`` lists them)."""

from __future__ import annotations

import io
from typing import Any, ClassVar, NamedTuple

from . import _bale


class BaleError(Exception):
    """Base of every error bale raises. ``code`` is the stable kind code
    (``"CORRUPT"``, ``"LOCKED"``, ...), ``message`` says what happened and
    what to do, ``page`` names the damaged page when there is one."""

    code: str = ""
    message: str = ""
    page: int | None = None

    def __init_subclass__(cls, code: str = "", **kwargs: Any) -> None:
        # `class XError(BaleError, code="X")`: each class names its code once.
        super().__init_subclass__(**kwargs)
        if code:
            cls.code = code


class NotFoundError(BaleError, KeyError, code="NOT_FOUND"):
    """A key (or the store file) does not exist. Also a ``KeyError``."""

    def __str__(self) -> str:
        if len(self.args) == 1 and isinstance(self.args[0], str):
            return self.args[0]
        return KeyError.__str__(self)


class CorruptError(BaleError, code="CORRUPT"):
    """Bytes on disk break a structural rule of the format."""


class ChecksumMismatchError(BaleError, code="CHECKSUM_MISMATCH"):
    """A page or block failed its checksum."""


class UnsupportedVersionError(BaleError, code="UNSUPPORTED_VERSION"):
    """A bale file of a kind or version this build cannot read."""


class NotABaleFileError(BaleError, code="NOT_A_BALE_FILE"):
    """The file is not a bale file (wrong magic, or empty)."""


class LockedError(BaleError, code="LOCKED"):
    """Another handle or process holds the writer lock."""


class InvalidArgumentError(BaleError, code="INVALID_ARGUMENT"):
    """The operation cannot accept an argument (e.g. a write to a read-only store)."""


class InvalidTypeError(InvalidArgumentError, TypeError):
    """An argument of the wrong type (a ``str`` key of a bytes store, a
    ``limit`` that is not a number, ...). Both bale's ``InvalidArgumentError``
    (code ``INVALID_ARGUMENT``) and a ``TypeError``, wherever it is raised."""


class TooLargeError(BaleError, code="TOO_LARGE"):
    """A size limit was exceeded (key length, value length)."""


class ConflictError(BaleError, code="CONFLICT"):
    """The store changed under this handle (e.g. compacted elsewhere): reopen it."""


class ClosedError(BaleError, code="CLOSED"):
    """The handle, snapshot or transaction was closed or has ended, or was
    inherited across ``fork``."""


class IoError(BaleError, OSError, code="IO"):
    """The operating system reported an I/O error. Also an ``OSError``."""


ERROR_CLASSES: dict[str, type[BaleError]] = {
    "": BaleError,
    **{
        c.code: c
        for c in (
            NotFoundError,
            CorruptError,
            ChecksumMismatchError,
            UnsupportedVersionError,
            NotABaleFileError,
            LockedError,
            InvalidArgumentError,
            TooLargeError,
            ConflictError,
            ClosedError,
            IoError,
        )
    },
}


class _ReaderFile(io.RawIOBase):
    """A seekable, read-only binary file over a reader of the extension
    (``_bale.ValueReader`` or ``_bale.ObjectReader``)."""

    _reader: Any
    mode: ClassVar[str] = "rb"

    def __init__(self, reader: Any) -> None:
        super().__init__()
        self._reader = reader

    @property
    def size(self) -> int:
        """The length in bytes."""
        return int(self._reader.size)

    def __len__(self) -> int:
        return self.size

    def readable(self) -> bool:
        self._checkClosed()  # type: ignore[attr-defined]
        return True

    def seekable(self) -> bool:
        self._checkClosed()  # type: ignore[attr-defined]
        return True

    def writable(self) -> bool:
        self._checkClosed()  # type: ignore[attr-defined]
        return False

    def write(self, b: Any, /) -> int:
        # What a file opened "rb" raises, rather than RawIOBase's NotImplementedError.
        self._checkClosed()  # type: ignore[attr-defined]
        raise io.UnsupportedOperation("write")

    def readinto(self, buffer: Any) -> int:
        self._checkClosed()  # type: ignore[attr-defined]
        return int(self._reader.readinto(buffer))

    def read(self, size: int | None = -1) -> bytes:
        self._checkClosed()  # type: ignore[attr-defined]
        return bytes(self._reader.read(-1 if size is None else size))

    def readall(self) -> bytes:
        self._checkClosed()  # type: ignore[attr-defined]
        return bytes(self._reader.read(-1))

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self._checkClosed()  # type: ignore[attr-defined]
        return int(self._reader.seek(offset, whence))

    def tell(self) -> int:
        self._checkClosed()  # type: ignore[attr-defined]
        return int(self._reader.tell())

    def close(self) -> None:
        if not self.closed:
            self._reader.close()
        super().close()


class ValueFile(_ReaderFile):
    """A seekable, read-only binary file over one stored value, read from a
    snapshot (later commits do not change it). Returned by ``open_value``;
    wrap it in ``io.BufferedReader`` for many small reads."""

    def __init__(self, reader: _bale.ValueReader) -> None:
        super().__init__(reader)

    def __repr__(self) -> str:
        state = " closed" if self.closed else ""
        return f"<bale.ValueFile size={self._reader.size}{state}>"


class ObjectFile(_ReaderFile):
    """A seekable, read-only binary file over one object of an object store,
    read chunk by chunk in bounded memory. Returned by
    ``ObjectStore.open``; it keeps working after the store is closed; wrap
    it in ``io.BufferedReader`` for many small reads."""

    def __init__(self, reader: _bale.ObjectReader) -> None:
        super().__init__(reader)

    @property
    def id(self) -> str:
        """The object's id (hex)."""
        return str(self._reader.id)

    @property
    def name(self) -> str:
        """The object's id, as ``name`` of an ``io`` file."""
        return self.id

    def __repr__(self) -> str:
        state = " closed" if self.closed else ""
        return f"<bale.ObjectFile {self._reader.id} size={self._reader.size}{state}>"


class BitableFile(_ReaderFile):
    """A seekable, read-only binary file over one value of a bitable, read
    block by block in bounded memory. Returned by ``Bitable.open_value``;
    it keeps its own handle on the table, so it works after the table is
    closed; wrap it in ``io.BufferedReader`` for many small reads."""

    def __init__(self, reader: _bale.BitableReader) -> None:
        super().__init__(reader)

    def __repr__(self) -> str:
        state = " closed" if self.closed else ""
        return f"<bale.BitableFile size={self._reader.size}{state}>"


class BitableProblem(NamedTuple):
    """One problem ``Bitable.check()`` found: ``page`` is the page it
    concerns or None (a total of the header), ``code`` the error code a read
    of it gives (``"CORRUPT"``, ``"CHECKSUM_MISMATCH"``, ...) and ``message``
    what was found."""

    page: int | None
    code: str
    message: str


class ObjectProblem(NamedTuple):
    """One problem an object store report lists (``validate()``, ``pack()``,
    ``repack()``, ``rebuild_index()``): ``id`` is the record or object it
    concerns (hex) or None, ``code`` the error code a read of it gives
    (``"CORRUPT"``, ``"CHECKSUM_MISMATCH"``, ``"NOT_FOUND"`` for a missing
    chunk, ...), ``message`` what was found and what was done, and ``file``
    the store file it concerns (``"packs/3.pack"``) or None."""

    id: str | None
    code: str
    message: str
    file: str | None


for _cls in (*ERROR_CLASSES.values(), InvalidTypeError, ValueFile, ObjectFile, ObjectProblem, BitableFile,
             BitableProblem):
    _cls.__module__ = "bale"
