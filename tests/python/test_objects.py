"""The object store (bale.ObjectStore): ids, adds in every form, reads,
batches, maintenance, reports, single-file mode and errors."""

import array
import errno
import hashlib
import io
import os
import pickle
import random

import pytest

import bale

BLAKE3_EMPTY = "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"
# Small chunks so that objects of a few hundred KiB are chunked, and a small
# fanout so that their chunk lists have several levels.
SMALL = dict(chunk_min=1024, chunk_avg=4096, chunk_max=16384, fanout=16)


def noise(n, seed=0):
    return random.Random(seed).randbytes(n)


@pytest.fixture
def path(tmp_path):
    return tmp_path / "objects"


@pytest.fixture
def store(path):
    with bale.ObjectStore(path, create=True, **SMALL) as s:
        yield s


@pytest.fixture(params=["dir", "file"])
def any_store(request, tmp_path):
    """A directory store and a single-file store, for what both must do alike."""
    single = request.param == "file"
    with bale.ObjectStore(tmp_path / ("o.bale" if single else "o"), create=True, single_file=single, **SMALL) as s:
        yield s


# ---------------------------------------------------------------- opening


def test_create_options_properties_and_config(path):
    with bale.ObjectStore(path, create=True, hash="sha256", compression="never", chunk_min=2048,
                          chunk_avg=8192, chunk_max=32768, fanout=64, pack_target=1 << 20) as s:
        assert s.path == path and s.hash == "sha256" and not s.single_file and not s.readonly and not s.closed
        assert s.format_version == 1
        c = s.config
        assert (c.hash, c.compression, c.chunk_min, c.chunk_avg, c.chunk_max, c.fanout, c.pack_target) == (
            "sha256", "never", 2048, 8192, 32768, 64, 1 << 20)
        assert len(c.store_id) == 32 and int(c.store_id, 16) >= 0
        assert list(c.to_dict()) == ["hash", "compression", "chunk_min", "chunk_avg", "chunk_max", "fanout",
                                     "pack_target", "store_id"]
        assert repr(c) == "ObjectConfig(" + ", ".join(f"{k}={v!r}" for k, v in c.to_dict().items()) + ")"
        assert repr(s) == f'<bale.ObjectStore "{path}">'
        store_id = c.store_id
    assert s.closed and repr(s).endswith(" closed>")
    # An existing store keeps its own parameters, whatever a later open asks for.
    with bale.ObjectStore(str(path), hash="sha1", compression="always", chunk_min=64) as again:
        assert again.hash == "sha256" and again.config.chunk_min == 2048 and again.config.store_id == store_id
    with bale.ObjectStore(path, readonly=True) as r:
        assert r.readonly and "readonly" in repr(r)


def test_defaults(path):
    with bale.ObjectStore(path, create=True) as s:
        c = s.config
        assert (c.hash, c.compression, c.chunk_min, c.chunk_avg, c.chunk_max, c.fanout, c.pack_target) == (
            "blake3", "auto", 16 << 10, 64 << 10, 256 << 10, 4096, 1 << 30)


def test_open_errors(tmp_path):
    with pytest.raises(bale.NotFoundError) as e:
        bale.ObjectStore(tmp_path / "missing")
    assert isinstance(e.value, KeyError) and "create it" in e.value.message and str(tmp_path) in e.value.message
    (tmp_path / "not-a-store").mkdir()
    (tmp_path / "not-a-store" / "file").write_bytes(b"x")
    with pytest.raises(bale.NotFoundError, match="not an object store"):
        bale.ObjectStore(tmp_path / "not-a-store")
    bad_values = [dict(hash="md5"), dict(compression="zstd"), dict(chunk_min=63), dict(chunk_min=1025),
                  dict(chunk_avg=100), dict(chunk_max=1 << 30), dict(chunk_min=1 << 40), dict(fanout=8),
                  dict(pack_target=1000), dict(chunk_min=-1), dict(pack_target=-5)]
    for kw in bad_values:
        with pytest.raises(bale.InvalidArgumentError) as e:
            bale.ObjectStore(tmp_path / "new", create=True, **kw)
        assert not isinstance(e.value, TypeError), kw
    bad_types = [dict(create="yes"), dict(readonly=1), dict(hash=3), dict(chunk_min=1024.0), dict(repair="no"),
                 dict(single_file=[])]
    for kw in bad_types:
        with pytest.raises(bale.InvalidTypeError):
            bale.ObjectStore(tmp_path / "new", **{"create": True, **kw})
    with pytest.raises(bale.InvalidTypeError):
        bale.ObjectStore(3)
    with pytest.raises(TypeError):
        bale.ObjectStore(tmp_path / "new", create=True, bogus=1)
    assert not (tmp_path / "new").exists() or not (tmp_path / "new" / "config").exists()
    # A bale tree store file is not an object store.
    with bale.Tree.open(tmp_path / "tree.bale", create=True) as t:
        t[b"k"] = b"v"
    with pytest.raises(bale.InvalidArgumentError, match="no object store"):
        bale.ObjectStore(tmp_path / "tree.bale")


def test_not_picklable(store):
    with pytest.raises(bale.InvalidTypeError, match="pass the path"):
        pickle.dumps(store)


# ---------------------------------------------------------------- ids


@pytest.mark.parametrize("name,digest", [("sha256", hashlib.sha256), ("sha1", hashlib.sha1)])
def test_ids_are_the_lower_case_hex_hash_of_the_content(tmp_path, name, digest):
    with bale.ObjectStore(tmp_path / name, create=True, hash=name) as s:
        for data in (b"", b"hello", noise(100_000)):
            oid = s.add(data)
            assert oid == digest(data).hexdigest() and oid == oid.lower()
            assert s.get(oid) == data


def test_blake3_ids_and_every_spelling_of_an_id(store):
    oid = store.add(b"")
    assert oid == BLAKE3_EMPTY
    raw = bytes.fromhex(oid)
    for spelling in (oid, oid.upper(), raw, bytearray(raw), memoryview(raw)):
        assert store.has(spelling) and spelling in store and store.get(spelling) == b""
        assert store.meta(spelling).id == oid
    assert store.has_many([oid.upper(), raw]) == [True, True]


def test_bad_ids(store):
    oid = store.add(b"x")
    wrong = [oid[:-2], oid + "00", "zz" * 32, "é" * 32, "", oid[:40], bytes.fromhex(oid)[:20], b"\0" * 33]
    calls = [store.get, store.has, store.meta, store.open, lambda i: i in store,
             lambda i: store.get_range(i, 0, 1), lambda i: store.has_many([i]), lambda i: store.delete([i]),
             lambda i: list(store.get_many([i]))]
    for bad in wrong:
        for call in calls:
            with pytest.raises(bale.InvalidArgumentError) as e:
                call(bad)
            assert e.value.code == "INVALID_ARGUMENT" and not isinstance(e.value, TypeError), (bad, call)
    for bad in (3, None, 1.5, [oid]):
        with pytest.raises(bale.InvalidTypeError, match="object id"):
            store.get(bad)
    for many in (store.has_many, store.delete, store.get_many):
        with pytest.raises(bale.InvalidTypeError, match="iterable of ids, not one id"):
            many(oid)  # a lone id, which iterating would split into characters
        with pytest.raises(bale.InvalidTypeError, match="iterable of ids"):
            many(7)
    assert store.has(oid)  # nothing was deleted


# ---------------------------------------------------------------- add and read


def test_add_get_has_meta_and_dedup(any_store):
    s = any_store
    a = s.add(b"hello")
    assert s.add(b"hello") == a and len(s) == 1
    e = s.add(b"")
    z = s.add(b"z" * 10_000)
    assert s.get(a) == b"hello" and s.get(e) == b"" and s.get(z, verify=True) == b"z" * 10_000
    assert s.has(a) and a in s and len(s) == 3
    assert sorted(s) == s.ids() == sorted([a, e, z])
    m = s.meta(a)
    assert (m.id, m.size, m.chunked, m.compressed) == (a, 5, False, False) and m.stored_size > 5
    assert m.packed == s.single_file  # a directory store stages first
    zm = s.meta(z)
    assert zm.compressed and zm.stored_size < 1000
    assert list(m.to_dict()) == ["id", "size", "stored_size", "chunked", "packed", "compressed"]
    assert repr(m) == "ObjectMeta(" + ", ".join(f"{k}={v!r}" for k, v in m.to_dict().items()) + ")"


def test_add_takes_any_bytes_like_object(store):
    data = b"bytes-like \x00\xff"
    want = store.add(data)
    for obj in (bytearray(data), memoryview(data), array.array("B", data), memoryview(b"xx" + data)[2:]):
        assert store.add(obj) == want
    assert store.add(array.array("I", [1, 2, 3])) == store.add(array.array("I", [1, 2, 3]).tobytes())
    for bad in ("text", 5, None, [1, 2], memoryview(b"abcdef")[::2]):
        with pytest.raises(bale.InvalidTypeError, match="bytes-like"):
            store.add(bad)
    assert len(store) == 2


def test_missing_objects_raise_not_found_which_is_a_key_error(store):
    store.add(b"present")
    missing = hashlib.sha256(b"absent").hexdigest()  # a well-formed blake3-length id
    for call in (store.get, store.meta, store.open, lambda i: store.get_range(i, 0, 1),
                 lambda i: store.get(i, verify=True)):
        with pytest.raises(bale.NotFoundError) as e:
            call(missing)
        assert isinstance(e.value, KeyError) and e.value.code == "NOT_FOUND" and missing in e.value.message
    with pytest.raises(KeyError):
        store.get(missing)
    assert not store.has(missing) and missing not in store and store.has_many([missing]) == [False]


def test_large_objects_are_chunked_and_read_in_ranges(any_store):
    s = any_store
    data = noise(3 << 20, 1)
    oid = s.add(data)
    m = s.meta(oid)
    assert m.chunked and m.size == len(data) and m.stored_size < 10_000
    assert s.get(oid) == data and s.get(oid, verify=True) == data
    for off, n in [(0, 10), (12_345, 70_000), (len(data) - 5, 100), (1 << 20, 1 << 20), (len(data), 10),
                   (len(data) + 100, 10), (5, 0)]:
        assert s.get_range(oid, off, n) == data[off:off + n], (off, n)
    # A second version sharing most of its content shares its chunks.
    before = s.stats()
    v2 = data[:2 << 20] + b"changed" + data[2 << 20:]
    oid2 = s.add(v2)
    after = s.stats()
    assert after.objects == 2 and after.chunked_objects == 2
    assert after.chunks - before.chunks < before.chunks // 4
    assert after.logical_bytes == len(data) + len(v2)
    assert s.get(oid2) == v2


def test_get_range_arguments(store):
    oid = store.add(b"0123456789")
    assert store.get_range(oid, 3, 4) == b"3456" and store.get_range(oid, 8, 100) == b"89"
    assert store.get_range(oid, 2**64 - 1, 2**64 - 1) == b""
    for off, n in [(-1, 1), (0, -1), (2**64, 1)]:
        with pytest.raises(bale.InvalidArgumentError):
            store.get_range(oid, off, n)
    for off, n in [("1", 1), (0, 1.0), (None, 1)]:
        with pytest.raises(bale.InvalidTypeError):
            store.get_range(oid, off, n)


# ---------------------------------------------------------------- files


def test_open_is_a_seekable_binary_file(store):
    data = noise(300_000, 2)
    oid = store.add(data)
    with store.open(oid) as f:
        assert isinstance(f, io.RawIOBase) and isinstance(f, bale.ObjectFile)
        assert f.readable() and f.seekable() and not f.writable() and f.mode == "rb"
        assert f.id == f.name == oid and f.size == len(f) == len(data)
        assert f.read(10) == data[:10] and f.tell() == 10
        assert f.seek(-100, io.SEEK_END) == len(data) - 100 and f.read() == data[-100:]
        assert f.read() == b"" and f.read(5) == b""
        assert f.seek(50_000) == 50_000 and f.seek(25, io.SEEK_CUR) == 50_025
        buf = bytearray(70_000)
        assert f.readinto(buf) == 70_000 and buf == data[50_025:120_025]
        assert f.seek(len(data) + 10) == len(data) + 10 and f.read(1) == b"" and f.readinto(buf) == 0
        f.seek(0)
        assert f.readall() == data
        with pytest.raises(ValueError):
            f.seek(-1)
        with pytest.raises(ValueError):
            f.seek(0, 3)
        with pytest.raises(io.UnsupportedOperation):
            f.write(b"x")
        assert oid in repr(f)
    assert f.closed and "closed" in repr(f)
    for op in (f.read, f.tell, lambda: f.seek(0), f.readall, lambda: f.readinto(bytearray(1))):
        with pytest.raises(ValueError):
            op()
    f.close()


def test_open_works_with_buffered_reader_and_copyfileobj(store, tmp_path):
    import shutil

    lines = b"".join(b"line %d\n" % i for i in range(20_000))
    oid = store.add(lines)
    with io.BufferedReader(store.open(oid), buffer_size=4096) as r:
        assert r.readline() == b"line 0\n" and r.read(7) == b"line 1\n"
        r.seek(-8, io.SEEK_END)
        assert r.readline() == b"line 19999\n"[-8:]
        r.seek(0)
        assert sum(1 for _ in r) == 20_000
    out = io.BytesIO()
    with store.open(oid) as f:
        shutil.copyfileobj(f, out, 1000)
    assert out.getvalue() == lines
    with store.open(oid) as f, open(tmp_path / "copy", "wb") as w:
        shutil.copyfileobj(f, w)
    assert (tmp_path / "copy").read_bytes() == lines
    with io.TextIOWrapper(io.BufferedReader(store.open(oid)), encoding="ascii") as t:
        assert t.readline() == "line 0\n"


def test_open_verified_reads_and_reads_after_close(path):
    s = bale.ObjectStore(path, create=True, **SMALL)
    data = noise(500_000, 3)
    oid = s.add(data)
    f = s.open(oid, verify=True)
    g = s.open(oid)
    assert f.read(1000) == data[:1000]
    s.close()
    # Files hold a handle of their own: they need no lock and keep working.
    assert f.read() == data[1000:] and g.read() == data
    f.close()
    g.close()


def test_add_file_from_paths_and_file_objects(store, tmp_path):
    data = noise(200_000, 4)
    p = tmp_path / "input.bin"
    p.write_bytes(data)
    want = store.add(data)
    assert store.add_file(p) == want and store.add_file(str(p)) == want
    with open(p, "rb") as f:
        assert store.add_file(f) == want
    with open(p, "rb", buffering=0) as f:  # a raw file
        assert store.add_file(f) == want
    assert store.add_file(io.BytesIO(b"small")) == store.add(b"small")
    assert store.add_file(io.BytesIO(b"")) == BLAKE3_EMPTY
    big = noise(2 << 20, 5)  # more than one read of the file object
    assert store.add_file(io.BytesIO(big)) == store.add(big)
    assert len(store) == 4


def test_add_file_errors(store, tmp_path):
    with pytest.raises(bale.IoError) as e:
        store.add_file(tmp_path / "missing.bin")
    assert isinstance(e.value, OSError) and e.value.errno == errno.ENOENT and "missing.bin" in e.value.message
    with pytest.raises(bale.IoError):
        store.add_file(tmp_path)  # a directory
    for bad in (b"bytes are not a file", 3, None):
        with pytest.raises(bale.InvalidTypeError, match="path or a binary file object"):
            store.add_file(bad)
    (tmp_path / "text.txt").write_text("text")
    with open(tmp_path / "text.txt") as t, pytest.raises(bale.InvalidTypeError, match="binary file"):
        store.add_file(t)
    assert len(store) == 0


class Failing(io.RawIOBase):
    """A binary file that gives `good` bytes, then raises from read."""

    def __init__(self, good):
        self.data = io.BytesIO(good)

    def readable(self):
        return True

    def read(self, n=-1):
        got = self.data.read(n)
        if not got:
            raise ConnectionResetError("the source went away")
        return got


def test_a_failing_read_propagates_and_adds_nothing(any_store):
    s = any_store
    s.add(b"before")
    before = s.stats()
    for good in (b"", b"short", noise(600_000, 6)):  # nothing read, one blob, a chunked object
        with pytest.raises(ConnectionResetError, match="went away"):
            s.add_file(Failing(good))
        assert s.stats().to_dict() == before.to_dict() and len(s) == 1
        assert s.validate().ok


def test_add_many(store):
    items = [b"a", bytearray(b"b"), memoryview(b"c"), b"a", noise(100_000, 7)]
    ids = store.add_many(items)
    assert ids == [store.add(bytes(x)) for x in items] and ids[0] == ids[3] and len(store) == 4
    assert store.add_many(b"%d" % i for i in range(1000)) == [store.add(b"%d" % i) for i in range(1000)]
    assert store.add_many([]) == []
    with pytest.raises(bale.InvalidTypeError, match="bytes-like"):
        store.add_many([b"ok", "text"])
    with pytest.raises(bale.InvalidTypeError, match="iterable"):
        store.add_many(5)

    def failing():
        yield b"first"
        raise RuntimeError("generator failed")

    with pytest.raises(RuntimeError, match="generator failed"):
        store.add_many(failing())


# ---------------------------------------------------------------- batches


def test_batch_commits_on_success_and_discards_on_exception(any_store, tmp_path):
    s = any_store
    (tmp_path / "f").write_bytes(b"from a path")
    with s.batch() as b:
        assert not b.closed and "ended" not in repr(b)
        x = b.add(b"x")
        p = b.add_file(tmp_path / "f")
        f = b.add_file(io.BytesIO(noise(100_000, 8)))
        if not s.single_file:  # a single-file batch holds the writer: readers see the last commit
            assert not s.has(x)
    assert b.closed and "ended" in repr(b)
    assert s.has_many([x, p, f]) == [True, True, True] and s.get(p) == b"from a path"
    with pytest.raises(KeyError), s.batch() as b:
        gone = b.add(b"discarded")
        raise KeyError("boom")
    assert b.closed and not s.has(gone)
    for op in (lambda: b.add(b"y"), lambda: b.add_file(io.BytesIO(b"y")), b.commit):
        with pytest.raises(bale.ClosedError, match="batch has ended"):
            op()
    b.discard()  # nothing to discard: fine


def test_batch_explicit_commit_and_discard(store):
    b = store.batch()
    a = b.add(b"kept")
    b.commit()
    assert store.has(a) and b.closed
    b2 = store.batch()
    d = b2.add(b"dropped")
    b2.discard()
    assert not store.has(d)
    with store.batch() as b3:
        c = b3.add(b"committed inside")
        b3.commit()  # the block's end then has nothing left to do
    assert store.has(c)
    with store.batch() as empty:
        pass
    assert empty.closed


def test_a_failing_read_inside_a_batch_leaves_the_batch_open(any_store):
    s = any_store
    with s.batch() as b:
        a = b.add(b"a")
        with pytest.raises(ConnectionResetError):
            b.add_file(Failing(noise(300_000, 9)))
        c = b.add(b"c")
    assert s.has_many([a, c]) == [True, True] and len(s) == 2
    assert s.validate().ok


def test_batch_errors(store):
    with store.batch() as b:
        with pytest.raises(bale.InvalidTypeError):
            b.add("text")
        with pytest.raises(bale.InvalidTypeError):
            b.add_file(5)
        with pytest.raises(bale.IoError):
            b.add_file("/nonexistent/file")
        ok = b.add(b"ok")
    assert store.has(ok)


# ---------------------------------------------------------------- get_many


def test_get_many_in_disk_order(store):
    ids = [store.add(b"object %d" % i) for i in range(10)]
    shuffled = ids[:]
    random.Random(1).shuffle(shuffled)
    got = list(store.get_many(shuffled))
    assert got == [(i, b"object %d" % n) for n, i in enumerate(ids)]  # the order they were written in
    store.pack()
    assert list(store.get_many(reversed(ids))) == got
    it = store.get_many(ids[:3] + ids[:3])
    assert iter(it) is it and it.__length_hint__() == 3 and len(list(it)) == 3  # each id once
    assert next(iter(store.get_many([])), None) is None
    missing = hashlib.sha256(b"no").hexdigest()
    with pytest.raises(bale.NotFoundError) as e:
        store.get_many([ids[0], missing])
    assert missing in e.value.message
    assert list(store.get_many([missing, ids[1]], skip_missing=True)) == [(ids[1], b"object 1")]


# ---------------------------------------------------------------- maintenance


def test_pack_moves_staged_objects(store):
    ids = [store.add(noise(n, n)) for n in (10, 100_000, 1000)]
    assert not any(store.meta(i).packed for i in ids) and store.stats().staged_records > 0
    r = store.pack()
    assert r.files_removed == 1 and r.records_moved == store.stats().records and r.files_in_use == 0
    assert r.problems == [] and r.bytes_freed > 0 and r.bytes_moved > 0
    assert list(r.to_dict())[-1] == "problems"
    assert repr(r) == "PackReport(" + ", ".join(f"{k}={v!r}" for k, v in r.to_dict().items()) + ")"
    assert all(store.meta(i).packed for i in ids) and store.stats().staged_records == 0
    assert [store.get(i) for i in ids] == [noise(n, n) for n in (10, 100_000, 1000)]


def test_pack_leaves_staging_files_other_handles_write(store, path):
    with bale.ObjectStore(path) as other:
        theirs = other.add(b"theirs")
        with other.batch() as b:
            b.add(b"in a batch")
            r = store.pack()  # the batch holds its staging file
            assert r.files_in_use >= 1
        assert store.has(theirs)


def test_delete_and_repack(store):
    keep = store.add(noise(50_000, 10))
    drop = [store.add(noise(50_000, n)) for n in range(11, 15)]
    missing = hashlib.sha256(b"never added").hexdigest()
    store.pack()
    stored = store.stats().stored_bytes
    assert store.delete(drop + [missing, drop[0]]) == 4
    assert not any(store.has_many(drop)) and store.has(keep) and len(store) == 1
    assert store.delete([]) == 0 and store.delete(iter(drop)) == 0
    r = store.repack()
    assert r.files_removed >= 1 and r.bytes_freed > 0
    assert store.stats().stored_bytes < stored // 2 and store.get(keep) == noise(50_000, 10)
    assert store.validate().ok


def test_repack_with_a_compression_policy(store):
    oid = store.add(b"compressible " * 5000)
    store.add(noise(20_000, 16))
    store.repack("never")
    assert not store.meta(oid).compressed and store.config.compression == "never"
    assert not store.meta(store.add(b"new " * 1000)).compressed  # the policy new records follow
    store.repack(compression="always")
    assert store.meta(oid).compressed and store.get(oid) == b"compressible " * 5000
    assert store.config.compression == "always"
    with pytest.raises(bale.InvalidArgumentError, match="compression"):
        store.repack("zstd")
    with pytest.raises(bale.InvalidTypeError):
        store.repack(1)


def test_maintenance_needs_the_store_to_itself(store, path):
    oid = store.add(b"x")
    other = bale.ObjectStore(path)
    for op in (lambda: store.delete([oid]), store.repack, store.rebuild_index):
        with pytest.raises(bale.LockedError) as e:
            op()
        assert e.value.code == "LOCKED" and "close it and retry" in e.value.message
    store.pack()  # the packer runs beside other handles
    with bale.ObjectStore(path, readonly=True) as reader:  # read-only handles take no locks
        other.close()
        assert store.delete([oid]) == 1 and not reader.has(oid)


def test_validate_reports_damage(path):
    with bale.ObjectStore(path, create=True, compression="never") as s:
        good = s.add(b"fine content")
        marker = b"0123456789abcdef" * 64
        bad = s.add(marker)
        s.pack()
        r = s.validate()
        assert r.ok and r.problems == [] and r.objects_checked == 2 and r.records_checked == 2
        assert list(r.to_dict()) == ["ok", "objects_checked", "records_checked", "bytes_checked",
                                  "unindexed_records", "unindexed_objects", "problems"]
        pack = path / "packs" / "0.pack"
        raw = bytearray(pack.read_bytes())
        at = raw.find(marker)
        raw[at + 100] ^= 0xFF
        pack.write_bytes(bytes(raw))
        r = s.validate()
        assert not r.ok and [(p[0], p[1]) for p in r.problems] == [(bad, "CHECKSUM_MISMATCH")]
        (p,) = r.problems
        assert isinstance(p, bale.ObjectProblem) and (p.id, p.code, p.file) == (bad, "CHECKSUM_MISMATCH", "packs/0.pack")
        assert isinstance(p.message, str) and p.message and p._asdict()["file"] == "packs/0.pack"
        with pytest.raises(bale.ChecksumMismatchError):
            s.get(bad)
        assert s.get(good, verify=True) == b"fine content"
        assert s.validate(sample=0).records_checked == 0
        s.validate(sample=50)
        for bad_sample in (-1, 100.5, float("nan")):
            with pytest.raises(bale.InvalidArgumentError, match="percentage"):
                s.validate(bad_sample)
        with pytest.raises(bale.InvalidTypeError):
            s.validate("all")


def test_pack_lists_a_damaged_staging_file(path):
    with bale.ObjectStore(path, create=True) as s:
        s.add(b"staged")
    (staging,) = (path / "staging").iterdir()
    raw = bytearray(staging.read_bytes())
    raw[30] ^= 4  # inside the file header
    staging.write_bytes(bytes(raw))
    with bale.ObjectStore(path) as s:
        (p,) = s.pack().problems
        assert p.file == f"staging/{staging.name}" and p.id is None and p.code in bale.ERROR_CODES
        assert "left in place" in p.message and staging.exists()


def zero_newest_meta(index):
    """Zeroes the index's meta slot of its newest commit: it falls back to
    the commit before."""
    raw = bytearray(index.read_bytes())
    page = max((1, 2), key=lambda p: int.from_bytes(raw[p * 4096 + 8:p * 4096 + 16], "little"))
    raw[page * 4096:(page + 1) * 4096] = bytes(4096)
    index.write_bytes(bytes(raw))


def test_an_index_that_fell_back_is_reported(path):
    with bale.ObjectStore(path, create=True, **SMALL) as s:
        first = s.add(b"an early object")
        last = s.add(b"the newest commit's object")
    zero_newest_meta(path / "index")
    with pytest.warns(RuntimeWarning, match="rebuild-index"):
        s = bale.ObjectStore(path)
    with s:
        assert s.index_warning is not None and "commit" in s.index_warning
        assert first in s and last not in s
        r = s.validate()
        assert not r.ok and r.problems[0].code == "CORRUPT" and r.unindexed_objects == 1
        # The lost object's staging file is kept, and nothing that removes
        # records runs, until the rebuild.
        assert s.pack().files_kept == 1
        with pytest.raises(bale.CorruptError, match="clean refused"):
            s.clean()
        with pytest.raises(bale.CorruptError, match="repack refused"):
            s.repack()
    with pytest.warns(RuntimeWarning):
        s = bale.ObjectStore(path)
    with s:
        assert s.index_warning is not None
        s.rebuild_index()
        assert s.index_warning is None and last in s and s.validate().ok


def test_rebuild_index(path):
    with bale.ObjectStore(path, create=True, **SMALL) as s:
        ids = [s.add(noise(n * 1000, n)) for n in range(1, 40, 7)]
        s.pack()
        s.add(b"still staged")
    (path / "index").unlink()
    with pytest.raises(bale.BaleError):
        bale.ObjectStore(path)
    with bale.ObjectStore(path, repair=True) as s:
        # Until the rebuild, the handle refuses everything else: its empty
        # index would take every record for garbage.
        with pytest.raises(bale.CorruptError, match="rebuild"):
            len(s)
        with pytest.raises(bale.CorruptError, match="rebuild"):
            s.pack()
        r = s.rebuild_index()
        assert r.objects == len(ids) + 1 and r.records >= r.objects and r.bad_records == 0 and r.problems == []
        assert list(r.to_dict()) == ["records", "objects", "bad_records", "skipped_ranges", "problems"]
        assert all(s.has_many(ids)) and len(s) == len(ids) + 1 and s.validate().ok


def test_stats(store):
    empty = store.stats()
    assert empty.to_dict() == dict.fromkeys(empty.to_dict(), 0)
    store.add(b"a" * 1000)
    store.add(noise(200_000, 17))
    store.add(b"a" * 1000)  # stored once
    st = store.stats()
    assert st.objects == 2 and st.logical_bytes == 201_000 and st.chunked_objects == 1 and st.chunks > 10
    assert st.records == st.staged_records and st.compressed_records >= 1 and st.stored_bytes > 0
    assert st.unique_bytes == 201_000 and st.packs == st.pack_bytes == 0
    store.pack()
    st = store.stats()
    assert st.packs == 1 and st.pack_bytes > st.stored_bytes and st.staged_records == 0
    assert repr(st) == "ObjectStats(" + ", ".join(f"{k}={v!r}" for k, v in st.to_dict().items()) + ")"


# ---------------------------------------------------------------- modes


def test_readonly(store, path):
    oid = store.add(b"x")
    with bale.ObjectStore(path, readonly=True) as r:
        assert r.get(oid) == b"x" and r.validate().ok and len(r) == 1
        for op in (lambda: r.add(b"y"), lambda: r.add_file(io.BytesIO(b"y")), lambda: r.add_many([b"y"]),
                   r.batch, r.pack, lambda: r.delete([oid]), r.repack, r.rebuild_index):
            with pytest.raises(bale.InvalidArgumentError, match="read-only"):
                op()


def test_single_file_store(tmp_path):
    p = tmp_path / "store.bale"
    with bale.ObjectStore(p, create=True, single_file=True, **SMALL) as s:
        assert s.single_file and p.is_file() and "single-file" in repr(s)
        data = noise(400_000, 18)
        oid = s.add(data)
        small = s.add(b"small")
        assert s.meta(oid).chunked and s.meta(oid).packed and s.get(oid) == data
        for op in (s.pack, s.rebuild_index):  # it has no packs, and its index is the store
            with pytest.raises(bale.InvalidArgumentError, match="single-file"):
                op()
        assert s.delete([small]) == 1 and not s.has(small)
        r = s.repack("never")  # re-encodes the records with the new policy
        assert r.records_moved >= 1 and s.config.compression == "never" and s.get(oid) == data
        assert s.validate().ok
    with bale.ObjectStore(p) as again:  # a file opens as a single-file store
        assert again.single_file and again.get(oid) == data and again.ids() == [oid]


def test_closed_store(store):
    oid = store.add(b"x")
    b = store.batch()
    f = store.open(oid)
    store.close()
    store.close()
    ops = [lambda: store.add(b"y"), lambda: store.get(oid), lambda: store.has(oid), lambda: oid in store,
           lambda: len(store), store.ids, lambda: list(store), lambda: store.meta(oid), lambda: store.open(oid),
           lambda: store.add_file(io.BytesIO(b"y")), lambda: store.add_many([b"y"]), store.batch,
           lambda: store.get_range(oid, 0, 1), lambda: store.has_many([oid]), lambda: store.get_many([oid]),
           lambda: store.delete([oid]), store.pack, store.repack, store.validate, store.rebuild_index,
           store.stats, store.clean, lambda: store.add_tree("."), lambda: store.export_to(store),
           lambda: b.add(b"y"), b.commit]
    for op in ops:
        with pytest.raises(bale.ClosedError) as e:
            op()
        assert e.value.code == "CLOSED"
    assert b.closed  # a batch ends with its store
    assert f.read() == b"x"
    assert store.hash == "blake3" and store.closed
    with pytest.raises(bale.ClosedError):
        store.config


# ---------------------------------------------------------------- trees, transfers, clean


def make_tree(root):
    files = {"a.txt": b"alpha", "sub/b.bin": noise(100_000, 20), "sub/deeper/c": b"", "sub/dup": b"alpha"}
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return files


def test_add_tree(store, tmp_path):
    root = tmp_path / "tree"
    files = make_tree(root)
    with bale.Tree.open(tmp_path / "paths.bale", create=True) as paths:
        r = store.add_tree(root, paths=paths)
        assert (r.files, r.bytes, r.dirs, r.skipped) == (4, sum(map(len, files.values())), 3, [])
        assert list(r.to_dict()) == ["files", "bytes", "dirs", "skipped"]
        for rel, data in files.items():
            oid = paths[rel.encode()].hex()
            assert store.get(oid) == data and oid == store.add(data)
        assert len(paths) == 4 and len(store) == 3  # a.txt and sub/dup share their content
    (root / "link").symlink_to(root / "a.txt")
    os.mkfifo(root / "sub" / "fifo")
    with pytest.raises(bale.InvalidArgumentError, match="link or special file"):
        store.add_tree(root)
    r = store.add_tree(str(root), skip_links=True)
    assert sorted(r.skipped) == ["link", "sub/fifo"] and r.files == 4
    with pytest.raises(bale.InvalidArgumentError, match="not a directory"):
        store.add_tree(root / "a.txt")
    with pytest.raises(bale.IoError):
        store.add_tree(tmp_path / "missing")
    with pytest.raises(bale.InvalidTypeError, match="bale.Tree"):
        store.add_tree(root, paths={})


def test_batch_packed_writes_straight_into_packs(store, path):
    with store.batch(packed=True) as b:
        ids = [b.add(noise(n, n)) for n in (10, 50_000)]
        with bale.ObjectStore(path) as other, pytest.raises(bale.LockedError):
            other.pack()  # the batch holds the packer lock
    assert all(store.meta(i).packed for i in ids) and store.stats().staged_records == 0
    assert [store.get(i) for i in ids] == [noise(n, n) for n in (10, 50_000)]


@pytest.mark.parametrize("single", [False, True], ids=["to-dir", "to-file"])
def test_export_and_import(store, tmp_path, single):
    ids = [store.add(noise(n, n)) for n in (0, 10, 300_000)]
    dest_path = tmp_path / ("dest.bale" if single else "dest")
    with bale.ObjectStore(dest_path, create=True, single_file=single) as dest:
        r = store.export_to(dest, ids[:2])
        assert (r.objects_copied, r.bytes_copied, r.objects_present) == (2, 10, 0)
        r = store.export_to(dest)
        assert (r.objects_copied, r.objects_present) == (1, 2) and r.bytes_copied == 300_000
        assert dest.ids() == store.ids() and dest.get(ids[2], verify=True) == noise(300_000, 300_000)
        assert dest.meta(ids[2]).chunked  # chunked again, with dest's parameters
        extra = dest.add(b"only in dest")
        r = store.import_from(dest, [extra, ids[0]])
        assert (r.objects_copied, r.objects_present) == (1, 1) and store.get(extra) == b"only in dest"
        assert list(r.to_dict()) == ["objects_copied", "bytes_copied", "objects_present"]


def test_transfer_errors(store, tmp_path):
    oid = store.add(b"x")
    with bale.ObjectStore(tmp_path / "sha", create=True, hash="sha256") as other:
        with pytest.raises(bale.InvalidArgumentError, match="different hashes"):
            store.export_to(other)
        with pytest.raises(bale.InvalidArgumentError, match="different hashes"):
            other.import_from(store)
    with bale.ObjectStore(tmp_path / "b", create=True) as b:
        pass
    with bale.ObjectStore(tmp_path / "b", readonly=True) as ro:
        with pytest.raises(bale.InvalidArgumentError, match="read-only"):
            store.export_to(ro)
    with pytest.raises(bale.ClosedError):
        store.export_to(b)
    for bad in (None, "path", 3):
        with pytest.raises(bale.InvalidTypeError, match="bale.ObjectStore"):
            store.export_to(bad)
    with pytest.raises(bale.InvalidTypeError):
        store.import_from(store, oid)  # one id, not an iterable of ids
    missing = hashlib.sha256(b"missing").hexdigest()
    with bale.ObjectStore(tmp_path / "c", create=True) as c, pytest.raises(bale.NotFoundError):
        store.export_to(c, [missing])


def test_clean(store, path):
    store.add(noise(10_000, 21))
    (path / "config.tmp").write_bytes(b"left by an interrupted creation")
    with bale.ObjectStore(path) as other:
        with pytest.raises(bale.LockedError):
            store.clean()
    r = store.clean()
    assert r.files_removed == 2 and r.bytes_freed > 10_000  # the staging file, packed, and config.tmp
    assert r.index_bytes_after <= r.index_bytes_before and not (path / "config.tmp").exists()
    assert list(r.to_dict()) == ["files_removed", "bytes_freed", "index_bytes_before", "index_bytes_after"]
    assert store.stats().staged_records == 0 and store.validate().ok
