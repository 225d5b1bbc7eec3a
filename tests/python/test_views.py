"""keys()/values()/items() without arguments are views, as dict's are: len,
in and iteration (also reversed) reflect the store; each iteration reads one
consistent state. With any argument they stay range iterators."""

from collections.abc import ItemsView, Iterator, KeysView, MutableMapping, ValuesView

import pytest

import bale

N = 700  # more than one batch of an iterator (16, 32, ... 512)


@pytest.fixture
def tree(tmp_path):
    with bale.Tree.open(tmp_path / "t.bale", create=True) as t:
        t.update({b"%04d" % i: b"v%d" % i for i in range(N)})
        yield t


def check_views(m, n):
    keys, values, items = m.keys(), m.values(), m.items()
    assert isinstance(keys, KeysView) and isinstance(values, ValuesView) and isinstance(items, ItemsView)
    assert isinstance(keys, bale.KeysView) and isinstance(values, bale.ValuesView) and isinstance(items, bale.ItemsView)
    assert len(keys) == len(values) == len(items) == n
    assert b"0003" in keys and b"zz" not in keys
    assert b"v3" in values and b"nope" not in values
    assert (b"0003", b"v3") in items and (b"0003", b"v4") not in items and (b"zz", b"v3") not in items
    assert list(keys) == [b"%04d" % i for i in range(n)]
    assert list(values) == [b"v%d" % i for i in range(n)]
    assert list(items) == [(b"%04d" % i, b"v%d" % i) for i in range(n)]
    assert list(reversed(keys))[:2] == [b"%04d" % (n - 1), b"%04d" % (n - 2)]
    assert next(reversed(items)) == (b"%04d" % (n - 1), b"v%d" % (n - 1))
    assert keys & {b"0001", b"zz"} == {b"0001"} and keys == {b"%04d" % i for i in range(n)}
    assert dict(items) == {b"%04d" % i: b"v%d" % i for i in range(n)}
    assert not isinstance(keys, Iterator)
    with pytest.raises(TypeError):
        next(keys)  # type: ignore[call-overload]


def test_views_of_a_tree_snapshot_and_transaction(tree):
    assert isinstance(tree, MutableMapping)
    check_views(tree, N)
    with tree.read() as snap:
        check_views(snap, N)
    with tree.write() as txn:
        check_views(txn, N)
        txn[b"%04d" % N] = b"v%d" % N  # the transaction's own changes count
        check_views(txn, N + 1)
        txn.rollback()


def test_len_of_keys_the_reported_bug(tree):
    assert len(tree.keys()) == len(tree.values()) == len(tree.items()) == N


def test_views_reflect_the_store_when_used(tree):
    keys, items = tree.keys(), tree.items()
    tree[b"new"] = b"x"
    assert len(keys) == N + 1 and b"new" in keys and (b"new", b"x") in items
    del tree[b"0000"]
    assert b"0000" not in keys and list(keys)[0] == b"0001"


def test_each_iteration_of_a_tree_view_reads_one_snapshot(tree):
    it = iter(tree.items())
    first = next(it)
    tree.clear()  # after the first batch was read, before the others
    assert [first, *it] == [(b"%04d" % i, b"v%d" % i) for i in range(N)]
    assert list(tree.items()) == []  # a new iteration sees the new state


def test_a_snapshot_view_ends_with_its_snapshot(tree):
    snap = tree.read()
    keys = snap.keys()
    tree[b"later"] = b"x"
    assert len(keys) == N and b"later" not in keys
    snap.close()
    with pytest.raises(bale.ClosedError):
        len(keys)
    with pytest.raises(bale.ClosedError):
        list(keys)


def test_a_transaction_view_never_mixes_two_states(tree):
    with tree.write() as txn:
        it = iter(txn.keys())
        first = [next(it) for _ in range(20)]  # past the first batch
        txn[b"0005x"] = b"added"
        with pytest.raises(bale.ConflictError) as e:
            list(it)
        assert e.value.code == "CONFLICT" and "changed" in e.value.message
        assert first == [b"%04d" % i for i in range(20)]
        assert len(list(txn.keys())) == N + 1  # a new iteration sees the change
        # The range forms go on seeing changes, batch by batch, as before.
        for k in txn.keys(prefix=b"00"):
            del txn[k]
        assert list(txn.keys()) == [b"%04d" % i for i in range(100, N)]
        txn.rollback()
    assert len(tree) == N


def test_any_argument_selects_a_range_iterator(tree):
    for it in (tree.keys(None), tree.values(b"0005"), tree.items(prefix=None), tree.keys(reverse=False),
               tree.keys(start=None), tree.keys(stop=b"0002")):
        assert isinstance(it, bale.RangeIterator) and isinstance(it, Iterator)
    assert next(tree.values(b"0005")) == b"v5"
    assert list(tree.keys(None, b"0002")) == [b"0000", b"0001"]
    with pytest.raises(bale.InvalidTypeError):
        tree.keys(b"0001", b"0002", b"0003")  # type: ignore[call-overload]
    with pytest.raises(bale.InvalidTypeError):
        tree.keys(b"0001", start=b"0002")  # type: ignore[call-overload]


def test_the_rest_of_the_mutable_mapping_surface(tree):
    assert tree.setdefault(b"0001") == b"v1"  # present: the default is not needed
    with pytest.raises(bale.InvalidTypeError):
        tree.setdefault(b"missing")  # a bytes store cannot hold None
    with pytest.raises(bale.InvalidTypeError):
        tree.update(name=b"x")  # keyword keys are str, not bytes
    assert b"missing" not in tree
    assert str(bale.Tree[bytes, bytes]) == "bale.Tree[bytes, bytes]"
    assert bale.Snapshot[bytes, bytes] is not None and bale.Transaction[bytes, bytes] is not None
    assert bale.KeysView[bytes] is not None
