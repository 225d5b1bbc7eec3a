"""Cursors on a snapshot and inside the write transaction: first, last,
next, prev and seek (py-lmdb's set_range), each returning the (key, value)
it lands on through the store's codecs, or None past an end."""

import os

import pytest

import bale

KEYS = [b"%04d" % i for i in range(0, 3000, 3)]  # several leaves


@pytest.fixture
def tree(tmp_path):
    with bale.Tree.open(tmp_path / "t.bale", create=True) as t:
        t.update((k, b"v" + k) for k in KEYS)
        yield t


def test_moves_and_ends(tree):
    with tree.read() as snap:
        c = snap.cursor()
        assert isinstance(c, bale.Cursor) and c.key is None
        assert c.next() == (b"0000", b"v0000") and c.key == b"0000"  # a new cursor starts at the first key
        assert c.next() == (b"0003", b"v0003")
        assert c.prev() == (b"0000", b"v0000")
        assert c.prev() is None and c.key is None  # before the first key, and it stays there
        assert c.prev() is None
        assert c.next() == (b"0000", b"v0000")
        assert c.last() == (b"2997", b"v2997")
        assert c.next() is None and c.next() is None  # past the last key
        assert c.prev() == (b"2997", b"v2997")
        assert snap.cursor().prev() == (b"2997", b"v2997")
        assert c.first() == (b"0000", b"v0000")


def test_seek_like_set_range(tree):
    with tree.read() as snap:
        c = snap.cursor()
        assert c.seek(b"0100") == (b"0102", b"v0102")  # the first key at or after
        assert c.seek(b"0102") == (b"0102", b"v0102")
        assert c.next() == (b"0105", b"v0105")
        assert c.seek(b"0100", before=True) == (b"0099", b"v0099")  # the last key at or before
        assert c.seek(b"9") is None and c.prev() == (b"2997", b"v2997")
        assert c.seek(b"", before=True) is None and c.next() == (b"0000", b"v0000")
        with pytest.raises(bale.InvalidTypeError):
            c.seek("0100")  # type: ignore[arg-type]


def test_walks_every_key_both_ways(tree):
    with tree.read() as snap:
        c, seen = snap.cursor(), []
        while (item := c.next()) is not None:
            seen.append(item[0])
        assert seen == KEYS
        seen = []
        while (item := c.prev()) is not None:
            seen.append(item[0])
        assert seen == KEYS[::-1]


def assert_ended(cursor, owner):
    """A cursor, and its snapshot or transaction, after that one ended."""
    for op in (cursor.next, cursor.first, lambda: cursor.seek(b"0"), owner.cursor):
        with pytest.raises(bale.ClosedError):
            op()


def test_a_snapshot_cursor_reads_its_commit_and_ends_with_it(tree):
    snap = tree.read()
    c = snap.cursor()
    tree[b"0001"] = b"later"
    assert c.seek(b"0001") == (b"0003", b"v0003")
    snap.close()
    assert_ended(c, snap)


def test_a_transaction_cursor_sees_its_changes(tree):
    with tree.write() as txn:
        c = txn.cursor()
        assert c.seek(b"0003") == (b"0003", b"v0003")
        txn[b"0004"] = b"new"
        assert c.next() == (b"0004", b"new")
        del txn[b"0004"]  # the current key goes: the moves find its neighbours
        del txn[b"0006"]
        assert c.next() == (b"0009", b"v0009")
        assert c.prev() == (b"0003", b"v0003")
        txn.rollback()
    assert_ended(c, txn)


def test_cursors_use_the_codecs_and_read_large_values(tmp_path):
    big = os.urandom(200_000)
    with bale.Tree.open(tmp_path / "c.bale", create=True, key_codec="utf8", value_codec="json", mmap=False) as t:
        t.update({"a/1": {"n": 1}, "a/2": [2], "b": "three"})
        with t.read() as snap:
            c = snap.cursor()
            assert c.seek("a/") == ("a/1", {"n": 1}) and c.key == "a/1"
            assert c.next() == ("a/2", [2]) and c.last() == ("b", "three")
    with bale.Tree.open(tmp_path / "b.bale", create=True) as t:
        t[b"big"] = big
        with t.read() as snap:
            assert snap.cursor().first() == (b"big", big)
        with t.write() as txn:
            assert txn.cursor().last() == (b"big", big)
