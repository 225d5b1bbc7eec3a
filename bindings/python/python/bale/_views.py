"""The views ``keys()``, ``values()`` and ``items()`` return when called
without arguments, as dict's do: ``len``, ``in`` and iteration (also
``reversed``) reflect the store, snapshot or transaction when used.

Each iteration reads one consistent state: a snapshot of its own from a
tree; in a write transaction, a change made between two batches of an
iteration ends it with ``ConflictError`` (dict raises ``RuntimeError``)
rather than mixing two states."""

from __future__ import annotations

import collections.abc
from collections.abc import Iterator
from typing import Any, TypeVar

__all__ = ["KeysView", "ValuesView", "ItemsView"]

_K = TypeVar("_K")
_V = TypeVar("_V")


class _Iterated:
    """Iteration both ways through the mapping's ``_iter(kind, reverse)``."""

    __slots__ = ()
    _kind = ""
    _mapping: Any

    def __iter__(self) -> Iterator[Any]:
        it: Iterator[Any] = self._mapping._iter(self._kind, False)
        return it

    def __reversed__(self) -> Iterator[Any]:
        it: Iterator[Any] = self._mapping._iter(self._kind, True)
        return it

    def __repr__(self) -> str:
        return f"<bale.{type(self).__name__} of {self._mapping!r}>"


class KeysView(_Iterated, collections.abc.KeysView[_K]):
    """The keys of a bale mapping, in order; a set-like view."""

    __slots__ = ()
    _kind = "keys"


class ValuesView(_Iterated, collections.abc.ValuesView[_V]):
    """The values of a bale mapping, in key order."""

    __slots__ = ()
    _kind = "values"

    def __contains__(self, value: object) -> bool:
        # One pass over one state, not a lookup per key.
        return any(v is value or v == value for v in self)


class ItemsView(_Iterated, collections.abc.ItemsView[_K, _V]):
    """The ``(key, value)`` pairs of a bale mapping, in key order."""

    __slots__ = ()
    _kind = "items"


for _cls in (KeysView, ValuesView, ItemsView):
    _cls.__module__ = "bale"
