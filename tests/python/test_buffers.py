"""Zero-copy reads on request: snap.get(key, buffer=True) returns a
bale.ValueView over the value's bytes, valid while the snapshot is open and
refused (ClosedError) after; a buffer exported from it holds the snapshot's
pages until released, so it never shows reused bytes."""

import gc
import hashlib
import os

import pytest

import bale


@pytest.fixture
def tree(tmp_path):
    with bale.Tree.open(tmp_path / "t.bale", create=True) as t:
        t[b"small"] = b"inline value bytes"
        t[b"empty"] = b""
        t[b"large"] = os.urandom(300_000)
        yield t


def test_a_view_reads_the_value_without_a_copy(tree):
    with tree.read() as snap:
        v = snap.get(b"small", buffer=True)
        assert isinstance(v, bale.ValueView) and v.zero_copy
        assert len(v) == 18 and v == b"inline value bytes" and bytes(v) == v.tobytes() == b"inline value bytes"
        assert v[0] == ord("i") and v[-1] == ord("s") and v[7:12] == b"value" and v[::-1] == b"inline value bytes"[::-1]
        with pytest.raises(IndexError):
            v[18]
        m = memoryview(v)
        assert m.readonly and m.nbytes == 18 and m.tobytes() == b"inline value bytes" and m.format == "B"
        assert hashlib.sha256(v).digest() == hashlib.sha256(b"inline value bytes").digest()
        m.release()
        assert snap.get(b"missing", buffer=True) is None and snap.get(b"missing", 7, buffer=True) == 7
        e = snap.get(b"empty", buffer=True)
        assert len(e) == 0 and bytes(e) == b"" and memoryview(e).nbytes == 0
        large = snap.get(b"large", buffer=True)  # out of line: read once into the view
        assert not large.zero_copy and large == snap[b"large"]


def test_without_a_memory_map_the_bytes_are_read_once(tmp_path):
    with bale.Tree.open(tmp_path / "m.bale", create=True, mmap=False) as t:
        t[b"k"] = b"value"
        with t.read() as snap:
            v = snap.get(b"k", buffer=True)
            assert not v.zero_copy and v == b"value" and memoryview(v).tobytes() == b"value"


def test_refused_once_the_snapshot_is_closed(tree):
    snap = tree.read()
    v = snap.get(b"small", buffer=True)
    owned = snap.get(b"large", buffer=True)
    snap.close()
    for view in (v, owned):
        for op in (lambda: bytes(view), lambda: memoryview(view), lambda: view[0], lambda: len(view),
                   lambda: view.tobytes(), lambda: view == b"x", lambda: hashlib.sha256(view)):
            with pytest.raises(bale.ClosedError) as e:
                op()
            assert e.value.code == "CLOSED" and "closed" in e.value.message
        assert "closed snapshot" in repr(view)


def test_an_export_keeps_its_pages_past_close_and_never_shows_reused_bytes(tree):
    snap = tree.read()
    m = memoryview(snap.get(b"small", buffer=True))
    snap.close()
    # Rewrite the store many times: freed pages are reused by later commits,
    # but not the ones the export holds.
    for round in range(30):
        with tree.write() as txn:
            txn[b"small"] = b"X" * 18
            for i in range(50):
                txn[b"fill%03d-%02d" % (i, round)] = os.urandom(100)
            if round % 3 == 2:
                txn.clear()
    gc.collect()
    assert m.tobytes() == b"inline value bytes"
    m.release()


def test_buffer_needs_a_snapshot_and_the_bytes_codec(tree, tmp_path):
    for m in (tree, tree.write()):
        with pytest.raises(bale.InvalidArgumentError, match="snapshot"):
            m.get(b"small", buffer=True)
    with bale.Tree.open(tmp_path / "j.bale", create=True, value_codec="json") as t:
        t[b"k"] = [1]
        with t.read() as snap, pytest.raises(bale.InvalidArgumentError, match='value_codec="bytes"'):
            snap.get(b"k", buffer=True)


def test_a_view_is_read_only(tree):
    import io

    with tree.read() as snap:
        v = snap.get(b"small", buffer=True)
        m = memoryview(v)
        with pytest.raises(TypeError):  # the memoryview's own refusal
            m[0] = 1
        with pytest.raises(TypeError):  # BytesIO asks for a writable buffer: refused, in its words
            io.BytesIO(b"0123456789").readinto(v)
        assert v == b"inline value bytes"
