"""The Python API: mapping protocol, transactions, ranges, streams, reports."""

import array
import io
import os
import pickle
import random
from collections.abc import Mapping, MutableMapping

import pytest

import bale


@pytest.fixture
def path(tmp_path):
    return tmp_path / "t.bale"


@pytest.fixture
def tree(path):
    with bale.Tree.open(path, create=True) as t:
        yield t


# ---------------------------------------------------------------- opening


def test_open_options_and_properties(path):
    with bale.Tree.open(path, create=True, page_size=8192, durable=False, mmap=False, wait=True) as t:
        assert t.page_size == 8192
        assert t.format_version == bale.FORMAT_VERSION == 1
        assert t.max_key_len == 2048
        assert t.path == path and not t.readonly and not t.closed
        t[b"k"] = b"v"
        t.sync()
    assert t.closed and "closed" in repr(t)
    with bale.Tree.open(str(path), readonly=True) as r:
        assert r.readonly and r[b"k"] == b"v" and r.page_size == 8192
        with pytest.raises(bale.InvalidArgumentError):
            r[b"x"] = b"y"


def test_open_errors(tmp_path):
    with pytest.raises(bale.NotFoundError) as e:
        bale.Tree.open(tmp_path / "missing.bale")
    assert "create=true" in str(e.value).lower()
    with pytest.raises(bale.InvalidArgumentError):
        bale.Tree.open(tmp_path, readonly=True)  # a directory
    with pytest.raises(bale.IoError) as is_dir:
        bale.Tree.open(tmp_path, create=True)
    assert is_dir.value.errno == 21  # EISDIR
    with pytest.raises(bale.InvalidArgumentError):
        bale.Tree.open(tmp_path / "p.bale", create=True, page_size=1000)
    (tmp_path / "text").write_bytes(b"hello, not a store")
    with pytest.raises(bale.NotABaleFileError):
        bale.Tree.open(tmp_path / "text")
    (tmp_path / "empty").write_bytes(b"")
    with pytest.raises(bale.NotABaleFileError):
        bale.Tree.open(tmp_path / "empty", readonly=True)
    with pytest.raises(bale.IoError) as io_err:
        bale.Tree.open(tmp_path / "text" / "below", create=True)
    assert isinstance(io_err.value, OSError) and io_err.value.errno == 20  # ENOTDIR


def test_closed_handle(tree):
    snap = tree.read()
    tree.close()
    tree.close()
    for op in (lambda: tree[b"a"], lambda: len(tree), lambda: tree.write(), lambda: list(tree)):
        with pytest.raises(bale.ClosedError) as e:
            op()
        assert e.value.code == "CLOSED"
    assert len(snap) == 0  # a snapshot taken before close keeps working
    snap.close()
    with pytest.raises(bale.ClosedError):
        len(snap)


def test_not_picklable(tree):
    with pytest.raises(TypeError, match="Tree.open"):
        pickle.dumps(tree)


# ---------------------------------------------------------------- mapping


def test_mapping_protocol(tree):
    assert isinstance(tree, MutableMapping) and len(tree) == 0 and list(tree) == []
    tree[b"b"] = b"2"
    tree[bytearray(b"a")] = memoryview(b"1")
    tree[memoryview(b"xcx")[1:2]] = array.array("B", [51])
    assert tree[b"a"] == b"1" and tree[b"c"] == b"3" and type(tree[b"a"]) is bytes
    assert b"a" in tree and b"z" not in tree and len(tree) == 3
    assert list(tree) == [b"a", b"b", b"c"]
    assert list(tree.items()) == [(b"a", b"1"), (b"b", b"2"), (b"c", b"3")]
    assert list(tree.values()) == [b"1", b"2", b"3"]
    assert tree.get(b"z") is None and tree.get(b"z", 5) == 5 and tree.get(b"a") == b"1"
    with pytest.raises(KeyError) as e:
        tree[b"z"]
    assert isinstance(e.value, bale.NotFoundError) and e.value.args == (b"z",) and e.value.code == "NOT_FOUND"
    del tree[b"b"]
    with pytest.raises(bale.NotFoundError):
        del tree[b"b"]
    assert tree.delete(b"c") is True and tree.delete(b"c") is False
    assert tree.pop(b"a") == b"1" and tree.pop(b"a", None) is None
    with pytest.raises(KeyError):
        tree.pop(b"a")
    assert tree.setdefault(b"s", b"d1") == b"d1" and tree.setdefault(b"s", b"d2") == b"d1"
    tree.update({b"u1": b"x", b"u2": b"y"})
    tree.update([(b"u3", b"z")])
    tree.put(b"u4", b"w")
    assert dict(tree.items()) == {b"s": b"d1", b"u1": b"x", b"u2": b"y", b"u3": b"z", b"u4": b"w"}
    assert tree.popitem() == (b"s", b"d1")
    tree.clear()
    assert len(tree) == 0
    with pytest.raises(KeyError):
        tree.popitem()
    with pytest.raises(TypeError):
        tree["str key"] = b"v"  # type: ignore[index]
    with pytest.raises(TypeError):
        tree[b"k"] = "str value"  # type: ignore[assignment]


def test_too_large_key(tree):
    tree[b"k" * tree.max_key_len] = b"ok"
    with pytest.raises(bale.TooLargeError) as e:
        tree[b"k" * (tree.max_key_len + 1)] = b"v"
    assert e.value.code == "TOO_LARGE" and "limit" in e.value.message


def test_large_values_whole(tree):
    big = os.urandom(200_000) + bytes(300_000)
    tree[b"big"] = big
    assert tree[b"big"] == big
    with tree.read() as s:
        assert s[b"big"] == big and list(s.values()) == [big]
    with tree.write() as txn:
        assert txn[b"big"] == big
        txn[b"big2"] = bytearray(big)
    assert tree[b"big2"] == big


# ---------------------------------------------------------------- transactions


def test_write_commits_on_success(tree):
    with tree.write() as txn:
        assert isinstance(txn, MutableMapping)
        txn[b"a"] = b"1"
        txn.put(b"b", b"2")
        txn.update({b"c": b"3"})
        assert txn[b"a"] == b"1" and len(txn) == 3 and b"c" in txn
        assert b"a" not in tree  # not visible outside before commit
        del txn[b"c"]
        assert txn.delete(b"zz") is False
        assert list(txn.items()) == [(b"a", b"1"), (b"b", b"2")]
    assert txn.closed and dict(tree.items()) == {b"a": b"1", b"b": b"2"}
    with pytest.raises(bale.ClosedError):
        txn[b"x"] = b"y"
    with pytest.raises(bale.ClosedError):
        txn.commit()


def test_write_rolls_back_on_exception(tree):
    tree[b"keep"] = b"1"
    with pytest.raises(RuntimeError):
        with tree.write() as txn:
            txn[b"lost"] = b"x"
            del txn[b"keep"]
            raise RuntimeError("boom")
    assert txn.closed and dict(tree.items()) == {b"keep": b"1"}
    txn2 = tree.write()  # the writer lock was released
    txn2.put(b"x", b"y")
    txn2.rollback()
    txn2.rollback()
    assert b"x" not in tree


def test_transaction_mapping_methods(tree):
    tree.update({b"a": b"1", b"b": b"2"})
    with tree.write() as txn:
        assert txn.pop(b"a") == b"1" and txn.pop(b"a", b"-") == b"-"
        with pytest.raises(KeyError):
            txn.pop(b"a")
        assert txn.setdefault(b"c", b"3") == b"3" and txn.setdefault(b"c", b"4") == b"3"
        assert txn.popitem() == (b"b", b"2") and txn.popitem() == (b"c", b"3")
        with pytest.raises(KeyError):
            txn.popitem()
        txn.update([(b"x", b"1")])
        txn.clear()
        assert len(txn) == 0 and list(txn) == []
    assert len(tree) == 0


def test_reads_without_a_memory_map(path):
    big = os.urandom(150_000)
    with bale.Tree.open(path, create=True, mmap=False) as t:
        t.update({b"%04d" % i: b"v%d" % i for i in range(3000)})
        t[b"big"] = big
        with t.read() as snap:
            assert snap[b"0007"] == b"v7" and snap[b"big"] == big and b"0008" in snap and b"x" not in snap
            assert list(snap.keys(b"0100", b"0103")) == [b"0100", b"0101", b"0102"]
            assert sum(1 for _ in snap.items()) == 3001 and list(snap.values(prefix=b"big")) == [big]
            assert list(snap.keys(prefix=b"29", reverse=True))[:2] == [b"2999", b"2998"]
            with snap.open_value(b"big") as f:
                assert f.read() == big


def test_explicit_commit_inside_block(tree):
    with tree.write() as txn:
        txn[b"a"] = b"1"
        txn.commit()
    assert tree[b"a"] == b"1"


def test_single_writer(path, tree):
    txn = tree.write()
    with pytest.raises(bale.LockedError) as e:
        tree.write()
    assert e.value.code == "LOCKED"
    with bale.Tree.open(path) as other, pytest.raises(bale.LockedError):
        other[b"x"] = b"y"
    txn.commit()
    tree[b"x"] = b"y"


def test_snapshot_isolation(tree):
    tree[b"a"] = b"old"
    with tree.read() as snap:
        tid = snap.txn_id
        tree[b"a"] = b"new"
        tree[b"b"] = b"added"
        assert snap[b"a"] == b"old" and b"b" not in snap and len(snap) == 1 and isinstance(snap, Mapping)
        assert snap.get(b"b", b"-") == b"-"
    with tree.read() as snap2:
        assert snap2.txn_id > tid and snap2[b"a"] == b"new"
    assert snap.closed
    with pytest.raises(bale.ClosedError):
        snap[b"a"]


def test_conflict_after_compaction_elsewhere(path, tree):
    tree[b"a"] = b"1"
    with bale.Tree.open(path) as other:
        other.compact()
    with pytest.raises(bale.ConflictError):
        tree[b"b"] = b"2"


# ---------------------------------------------------------------- ranges


def model_range(keys, start=None, stop=None, prefix=None, reverse=False, include_stop=False, gt=None, offset=0, limit=None):
    out = []
    for k in sorted(keys):
        if start is not None and k < start:
            continue
        if gt is not None and k <= gt:
            continue
        if stop is not None and (k > stop or (k == stop and not include_stop)):
            continue
        if prefix is not None and not k.startswith(prefix):
            continue
        out.append(k)
    out = out[::-1] if reverse else out
    return out[offset:][:limit]


def test_ranges_match_a_model(tree):
    rng = random.Random(7)
    keys = {bytes(rng.choice(b"ab\xff") for _ in range(rng.randint(0, 4))) for _ in range(300)}
    keys |= {b"m%05d" % i for i in range(2000)}  # enough to cross several batches
    with tree.write() as txn:
        for k in keys:
            txn[k] = k[::-1] + b"!"
    probes = [None, b"", b"a", b"ab", b"b\xff", b"\xff", b"\xff\xff", b"m00100", b"m01999", b"z"]
    with tree.read() as snap:
        for _ in range(300):
            kw = dict(
                start=rng.choice(probes),
                stop=rng.choice(probes),
                prefix=rng.choice([None, b"", b"a", b"\xff", b"m01", b"b\xff"]),
                reverse=rng.random() < 0.5,
                include_stop=rng.random() < 0.5,
            )
            if rng.random() < 0.3:
                kw["gt"] = kw.pop("start")
            if rng.random() < 0.3:
                kw["offset"] = rng.randint(0, 40)
            if rng.random() < 0.3:
                kw["limit"] = rng.randint(0, 60)
            want = model_range(keys, **kw)
            assert list(snap.keys(**kw)) == want, kw
            if rng.random() < 0.1:
                assert list(tree.items(**kw)) == [(k, k[::-1] + b"!") for k in want], kw
                assert list(snap.values(**kw)) == [k[::-1] + b"!" for k in want], kw
    assert list(tree.keys(b"m00010", b"m00013")) == [b"m00010", b"m00011", b"m00012"]
    assert list(tree.keys(b"m00010", b"m00012", include_stop=True, reverse=True)) == [b"m00012", b"m00011", b"m00010"]
    assert list(tree.keys(b"z", b"a")) == []
    assert isinstance(iter(tree), bale.RangeIterator) and str(bale.RangeIterator[bytes]) == "bale.RangeIterator[bytes]"


def test_range_options_follow_the_core_rules(tree):
    tree.update({b"%03d" % i: b"v" for i in range(300)})
    assert list(tree.keys(gt=b"100", lte=b"103")) == [b"101", b"102", b"103"]
    assert list(tree.keys(prefix=b"1", reverse=True, offset=5, limit=3)) == [b"194", b"193", b"192"]
    assert list(tree.items(b"290", offset=8)) == [(b"298", b"v"), (b"299", b"v")]
    assert list(tree.keys(limit=0)) == [] and list(tree.keys(offset=300)) == []
    assert list(tree.keys(b"200", b"100")) == [] and list(tree.keys(gt=b"100", lt=b"100")) == []
    assert len(list(tree.keys(gt=None, limit=None, include_stop=None))) == 300  # None is no option
    with tree.read() as snap:
        for bad in [
            dict(gt=b"1", gte=b"2"),
            dict(lt=b"1", lte=b"2"),
            dict(start=b"1", gte=b"2"),  # start is gte
            dict(stop=b"1", lt=b"2"),  # stop is lt
            dict(stop=b"1", lte=b"2", include_stop=True),
            dict(limit=-1),
            dict(limit=1.5),
            dict(offset=-2),
            dict(limit="3"),
            dict(reverse="yes"),
            dict(gt="text"),  # keys are bytes-like
            dict(start=42),
            dict(include_stop=1),
            dict(end=b"x"),
            dict(lmit=3),
        ]:
            for call in (tree.keys, snap.values, tree.items):
                with pytest.raises(bale.InvalidArgumentError) as info:
                    call(**bad)
                assert info.value.code == "INVALID_ARGUMENT", bad
    with pytest.raises(bale.InvalidArgumentError, match='unknown range option "lmit"'):
        tree.keys(lmit=3)
    with pytest.raises(bale.InvalidArgumentError, match="limit must be a non-negative integer, not -1"):
        tree.keys(limit=-1)
    with tree.write() as txn:
        with pytest.raises(bale.InvalidArgumentError):
            txn.keys(gt=b"1", gte=b"1")
        assert list(txn.keys(gte=b"298")) == [b"298", b"299"]


def test_ranges_inside_a_write_transaction(tree):
    tree.update({b"k%04d" % i: b"old" for i in range(0, 1000, 2)})
    with tree.write() as txn:
        for i in range(1, 1000, 2):
            txn[b"k%04d" % i] = b"new"
        del txn[b"k0000"]
        keys = list(txn.keys(prefix=b"k0"))
        assert keys == [b"k%04d" % i for i in range(1, 1000)]
        assert list(txn.items(b"k0997", reverse=True)) == [(b"k0999", b"new"), (b"k0998", b"old"), (b"k0997", b"new")]
        it = iter(txn.values())
        next(it)
    with pytest.raises(bale.ClosedError):
        list(it)  # the transaction has ended


def test_iterator_keeps_its_snapshot(tree):
    tree.update({b"%03d" % i: b"v" for i in range(600)})
    it = iter(tree.keys())
    first = next(it)
    tree.clear()
    assert [first, *it] == [b"%03d" % i for i in range(600)]
    assert list(it) == []
    it2 = iter(tree.keys())
    it2.close()
    assert list(it2) == []


# ---------------------------------------------------------------- streams


class Chunky(io.RawIOBase):
    """A file object that records the sizes asked of read()."""

    def __init__(self, data):
        self.src = io.BytesIO(data)
        self.asked = []

    def readable(self):
        return True

    def read(self, n=-1):
        self.asked.append(n)
        return self.src.read(min(n, 70_000))


def test_put_stream_and_open_value(tree):
    data = os.urandom(300_000) + b"abc" * 400_000 + os.urandom(1234)
    src = Chunky(data)
    assert tree.put_stream(b"blob", src) == len(data)
    assert all(0 < n <= 1 << 20 for n in src.asked), "put_stream reads in bounded chunks"
    tree[b"small"] = b"tiny"
    with tree.write() as txn:
        assert txn.put_stream(b"inline", io.BytesIO(b"short")) == 5
        assert txn.put_stream(b"empty", io.BytesIO()) == 0
    assert tree[b"inline"] == b"short" and tree[b"empty"] == b""

    f = tree.open_value(b"blob")
    assert isinstance(f, io.RawIOBase) and isinstance(f, bale.ValueFile)
    assert f.readable() and f.seekable() and not f.writable() and f.size == len(f) == len(data)
    assert f.read(10) == data[:10] and f.tell() == 10
    assert f.seek(299_990) == 299_990 and f.read(20) == data[299_990:300_010]
    assert f.seek(-5, io.SEEK_END) == len(data) - 5 and f.read() == data[-5:] and f.read() == b""
    assert f.seek(100) == 100 and f.seek(50, io.SEEK_CUR) == 150
    buf = bytearray(70_000)
    assert f.readinto(buf) == 70_000 and bytes(buf) == data[150:70_150]
    mv = memoryview(bytearray(10))
    f.seek(len(data) - 4)
    assert f.readinto(mv) == 4 and mv[:4].tobytes() == data[-4:]
    f.seek(0)
    assert f.readall() == data
    f.seek(len(data) + 10)
    assert f.read(5) == b"" and f.readinto(bytearray(5)) == 0
    with pytest.raises(ValueError):
        f.seek(-1)
    with pytest.raises(io.UnsupportedOperation):
        f.write(b"x")  # as a file opened "rb"
    f.seek(0)
    assert io.BufferedReader(f).read() == data
    f.close()
    with pytest.raises(ValueError):
        f.read()

    with tree.read() as snap, snap.open_value(b"small") as g:
        assert g.read() == b"tiny"
    with pytest.raises(bale.NotFoundError):
        tree.open_value(b"nope")


def test_open_value_reads_its_snapshot(tree):
    old = os.urandom(150_000)
    tree[b"v"] = old
    f = tree.open_value(b"v")
    tree[b"v"] = b"replaced"
    tree.compact()
    assert f.read() == old


def test_put_stream_errors_propagate(tree):
    class Boom(io.RawIOBase):
        def readable(self):
            return True

        def read(self, n=-1):
            raise ZeroDivisionError("source failed")

    with tree.write() as txn:
        with pytest.raises(ZeroDivisionError, match="source failed"):
            txn.put_stream(b"k", Boom())
        with pytest.raises(TypeError, match="binary file"):
            txn.put_stream(b"k", io.StringIO("text"))
        txn[b"after"] = b"still usable"
    assert tree[b"after"] == b"still usable" and b"k" not in tree
    with pytest.raises(ZeroDivisionError):
        tree.put_stream(b"k", Boom())


# ---------------------------------------------------------------- reports


def test_stat_check_compact(tree):
    tree.update({b"%05d" % i: b"x" * 50 for i in range(3000)})
    tree[b"big"] = os.urandom(100_000)
    with tree.write() as txn:
        for i in range(0, 3000, 2):
            del txn[b"%05d" % i]
    st = tree.stat()
    assert st.entries == 1501 and st.page_size == 4096 and st.depth >= 2 and st.large_values == 1
    assert st.large_value_bytes == 100_000 and 0 < st.fill <= 1 and st.to_dict()["entries"] == 1501
    rep = tree.check()
    assert rep.ok and rep.problems == [] and rep.entries == 1501 and rep.pages > 0
    c = tree.compact()
    assert c.entries == 1501 and c.bytes_after <= c.bytes_before
    assert len(tree) == 1501 and tree[b"00001"] == b"x" * 50


def test_damaged_newest_meta_is_reported_not_silent(path, tree):
    for commit in range(3):
        tree[b"k"] = b"commit %d" % commit
    assert tree.stat().meta_slot == 1 + tree.stat().txn % 2
    newest = 1 + tree.stat().txn % 2
    tree.close()
    raw = bytearray(path.read_bytes())
    raw[newest * 4096 + 200] ^= 0x01  # a bit of the newest meta page
    path.write_bytes(bytes(raw))
    with bale.Tree.open(path, readonly=True) as t:
        assert t[b"k"] == b"commit 1"  # the previous commit, opened without error ...
        rep = t.check()
        assert not rep.ok  # ... but never silently
        page, message = rep.problems[0]
        assert page == newest and "lost" in message
        assert rep.meta_slot == t.stat().meta_slot == 3 - newest


def test_close_of_non_durable_tree_syncs(path):
    t = bale.Tree.open(path, create=True, durable=False)
    t[b"k"] = b"v"
    assert t.close() is None and t.closed
    assert t.close() is None  # closing twice is harmless
    with bale.Tree.open(path, readonly=True) as r:
        assert r[b"k"] == b"v"


def test_check_names_damaged_pages(path, tree):
    tree.update({b"%05d" % i: b"y" * 80 for i in range(2000)})
    tree.close()
    raw = bytearray(path.read_bytes())
    raw[10 * 4096 + 100] ^= 0xFF  # inside a tree page
    path.write_bytes(bytes(raw))
    with bale.Tree.open(path, readonly=True) as t:
        rep = t.check()
        assert not rep.ok and any(page == 10 for page, _ in rep.problems)
        with pytest.raises((bale.ChecksumMismatchError, bale.CorruptError)) as e:
            list(t.items())
        assert e.value.page == 10
