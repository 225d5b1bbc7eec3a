"""How the package looks to a type checker. `make test-python` runs
`mypy --strict` over this file (next to stubtest on the stubs), and
test_typing_usage.py runs it, so every line here is also checked at run
time. A `# type: ignore[...]` line is an error mypy must report (--strict
warns about an ignore that is not needed)."""

import hashlib
import io
from collections.abc import Iterator, Mapping, MutableMapping
from pathlib import Path
from typing import Any, assert_type

import bale


def bytes_store(path: Path) -> None:
    with bale.Tree.open(path, create=True) as t:
        assert_type(t, bale.Tree[bytes, bytes])
        m: MutableMapping[bytes, bytes] = t  # the reported bug: a plain class before
        m[b"k"] = b"v"
        assert_type(t[b"k"], bytes)
        assert_type(t.get(b"k"), bytes | None)
        assert_type(t.get(b"k", 0), bytes | int)
        assert_type(t.pop(b"zz", None), bytes | None)
        assert len(t.keys()) == len(t.values()) == len(t.items()) == 1
        assert_type(t.keys(), bale.KeysView[bytes])
        assert_type(t.values(), bale.ValuesView[bytes])
        assert_type(t.items(), bale.ItemsView[bytes, bytes])
        assert_type(t.keys(b"a", b"z"), bale.RangeIterator[bytes])
        assert_type(t.items(prefix=b"k", limit=2), bale.RangeIterator[tuple[bytes, bytes]])
        assert_type(iter(t), bale.RangeIterator[bytes])
        it: Iterator[bytes] = t.values(reverse=True)
        assert list(it) == [b"v"]
        t.update({b"a": b"1"})
        t.update([(b"b", b"2")])
        assert_type(t.setdefault(b"c", b"3"), bytes)
        assert_type(t.popitem(), tuple[bytes, bytes])
        with t.read() as snap:
            assert_type(snap, bale.Snapshot[bytes, bytes])
            c = snap.cursor()
            assert_type(c.seek(b"a"), tuple[bytes, bytes] | None)
            assert_type(c.key, bytes | None)
            view = snap.get(b"b", buffer=True)
            assert_type(view, bale.ValueView | None)
            assert view is not None and memoryview(view).tobytes() == b"2" and view[0] == ord("2")
            assert hashlib.sha256(view).digest() == hashlib.sha256(b"2").digest()
            assert_type(snap.get(b"b"), bytes | None)
            r: Mapping[bytes, bytes] = snap
            assert r[b"b"] == b"2" and b"b" in snap.keys()
        with t.write() as txn:
            assert_type(txn, bale.Transaction[bytes, bytes])
            w: MutableMapping[bytes, bytes] = txn
            w[b"d"] = b"4"
        assert_type(t.stat().to_dict(), dict[str, int | float])


def codec_stores(path: Path) -> None:
    with bale.Tree.open(path, create=True, key_codec="utf8", value_codec="json") as t:
        assert_type(t, bale.Tree[str, Any])
        t["asset/42"] = {"kind": "texture"}
        assert t["asset/42"]["kind"] == "texture"
        assert_type(t.keys(prefix="asset/"), bale.RangeIterator[str])
        m: MutableMapping[str, Any] = t
        with t.write() as txn:
            assert_type(txn.cursor().first(), tuple[str, Any] | None)
        t.update(other=1)  # keyword keys are str: they type-check on a str-keyed store only
        assert m["other"] == 1
    with bale.Tree.open(path, key_codec="utf8") as raw:
        assert_type(raw, bale.Tree[str, bytes])
        assert raw["other"] == b"1"
    with bale.Tree.open(path, value_codec="utf8", readonly=True) as text:
        assert_type(text, bale.Tree[bytes, str])
        assert text[b"other"] == "1"
    with bale.Tree.open(path, key_codec="utf8", value_codec="utf8", mmap=False) as both:
        assert_type(both, bale.Tree[str, str])
    with bale.Tree.open(path, value_codec="pickle") as pickled:
        assert_type(pickled, bale.Tree[bytes, Any])


def object_store(path: Path) -> None:
    with bale.ObjectStore(path, create=True, hash="sha256", chunk_min=1024, chunk_avg=4096, chunk_max=16384) as s:
        assert_type(s, bale.ObjectStore)
        oid = s.add(b"data")
        assert_type(oid, str)
        assert oid == hashlib.sha256(b"data").hexdigest()
        assert_type(s.get(oid), bytes)
        assert_type(s.get(bytes.fromhex(oid), verify=True), bytes)
        assert_type(s.get_range(oid, 1, 2), bytes)
        assert_type(s.add_many([b"a", bytearray(b"b"), memoryview(b"c")]), list[str])
        assert_type(s.add_file(io.BytesIO(b"streamed")), str)
        source = path.parent / "source.bin"
        source.write_bytes(b"from a path")
        assert_type(s.add_file(source), str)
        with s.batch() as b:
            assert_type(b, bale.ObjectBatch)
            assert_type(b.add(b"in a batch"), str)
        with s.open(oid) as f:
            assert_type(f, bale.ObjectFile)
            assert f.read() == b"data" and f.id == oid
        assert_type(s.meta(oid).size, int)
        for i, data in s.get_many([oid], skip_missing=True):
            assert_type(i, str)
            assert_type(data, bytes)
        assert_type(s.has_many([oid, bytes.fromhex(oid)]), list[bool])
        assert oid in s and len(s) == 7 and list(s) == s.ids()
        assert_type(s.pack(), bale.PackReport)
        report = s.validate(sample=50)
        assert_type(report.problems, list[bale.ObjectProblem])
        for problem in report.problems:
            assert_type(problem.file, str | None)
        assert_type(s.stats().to_dict(), dict[str, int])
        assert_type(s.config.chunk_max, int)
        assert_type(s.delete([oid]), int)
        with bale.ObjectStore(path.parent / "copy", create=True, hash="sha256") as copy:
            assert_type(s.export_to(copy).objects_copied, int)
            assert_type(copy.import_from(s, [s.ids()[0]]), bale.TransferReport)
        with s.batch(packed=True) as packed:
            packed.add(b"straight into a pack")
        tree = path.parent / "tree"
        tree.mkdir()
        (tree / "f").write_bytes(b"a file")
        with bale.Tree.open(path.parent / "paths.bale", create=True) as paths:
            assert_type(s.add_tree(tree, paths=paths).skipped, list[str])
            assert paths[b"f"].hex() == s.add(b"a file")
        assert_type(s.clean(), bale.CleanReport)


def remotes(path: Path) -> None:
    bucket = f"file://{path.parent / 'bucket'}"
    with bale.ObjectStore(path, create=True) as s, bale.ObjectStore(path.parent / "other", create=True) as o:
        oid = s.add(b"shared")
        assert_type(s.connect_remote("origin", bucket, grace=3600.5), None)
        o.connect_remote("origin", bucket, endpoint=None, region=None, path_style=None)
        config = s.remotes()["origin"]
        assert_type(config["url"], str)
        assert_type(config["path_style"], bool | None)
        seen: list[tuple[int, int]] = []
        pushed = s.push("origin", [oid], refs={"main": oid}, progress=lambda d, t: seen.append((d, t)), threads=2)
        assert_type(pushed, bale.PushReport)
        assert_type(pushed.packs, list[str])
        assert_type(o.pull("origin", lazy=True), bale.PullReport)
        assert_type(o.get(oid, remote="origin"), bytes)
        assert_type(o.fetch("origin", [oid]).objects_present, int)
        info = o.remote_info("origin")
        assert_type(info.refs, dict[str, str])
        assert_type(info.grace, float)
        assert_type(s.remote_gc("origin", dry_run=True).deleted, list[str])
        s.remove_remote("origin")


def bitables(path: Path) -> None:
    with bale.BitableWriter(path, page_size=8192, align=8, compression="never") as w:
        assert_type(w, bale.BitableWriter)
        w.append(b"a", b"1")
        w.append(bytearray(b"b"), io.BytesIO(b"2"))
        w.append(b"c", [b"3", memoryview(b"4")])
        assert len(w) == 3 and w.max_key_len == 2048
        summary = w.finish(durable=False)
        assert_type(summary, bale.BitableSummary)
        assert_type(summary.entries, int)
    with bale.Bitable.open(path, mmap=False) as t:
        assert_type(t, bale.Bitable)
        assert_type(t[b"a"], bytes)
        assert_type(t.get(b"a"), bytes | None)
        assert_type(t.get(b"a", 0), bytes | int)
        assert_type(t.get(b"a", max_size=None), bytes | None)
        view = t.get(b"a", buffer=True)
        assert_type(view, bale.BitableView | None)
        assert view is not None and bytes(memoryview(view)) == b"1"
        c = t.lower_bound(b"b")
        assert_type(c, bale.BitableCursor)
        assert_type(c.key, bytes | None)
        assert c.next() and c.value == b"34" and c.ordinal == 2
        assert_type(t.find(b"z"), bale.BitableCursor | None)
        assert_type(t.range(b"a", b"c"), bale.BitableIterator[tuple[bytes, bytes]])
        assert_type(t.prefix(b"a", reverse=True), bale.BitableIterator[tuple[bytes, bytes]])
        keys: Iterator[bytes] = iter(t)
        assert list(keys) == [b"a", b"b", b"c"] and t.rank(b"b") == 1
        with t.open_value(b"c") as f:
            assert_type(f, bale.BitableFile)
            assert f.read() == b"34"
        assert_type(t.stats().level_pages, list[int])
        report = t.check(progress=lambda done, total: None)
        assert_type(report.problems, list[bale.BitableProblem])
        assert report.ok
    with bale.UnsortedBitableWriter(path.parent / "u", memory_budget=1 << 20, on_duplicate="error") as u:
        u.add(b"z", b"1")
        u.add(b"a", io.BytesIO(b"2"))
        u.finish()
    with bale.BitableWriter(path.parent / "m") as m:
        inputs = [bale.Bitable.open(path), bale.Bitable.open(path.parent / "u")]
        assert_type(m.merge(inputs, on_duplicate="newest"), int)
        m.finish()


def refused_for_bitables(t: bale.Bitable, w: bale.BitableWriter) -> None:
    """Never called: each line is a type error mypy must find."""
    w.append("text", b"v")  # type: ignore[arg-type]
    w.append(b"k", "text")  # type: ignore[arg-type]
    t.get("k")  # type: ignore[call-overload]
    t.range("a")  # type: ignore[arg-type]
    w.merge([w])  # type: ignore[list-item]
    bale.BitableWriter("p", compression="zstd")  # type: ignore[arg-type]
    bale.BitableWriter("p", 4096)  # type: ignore[call-arg]


def refused_for_codecs(snap: bale.Snapshot[str, str]) -> None:
    """Never called: a buffer of a store whose values are decoded (str)."""
    snap.get("k", buffer=True)  # type: ignore[call-overload]


def refused_by_the_checker(t: bale.Tree[bytes, bytes], snap: bale.Snapshot[bytes, bytes]) -> None:
    """Never called: each line is a type error mypy must find."""
    t["text"] = b"v"  # type: ignore[index]
    t[b"k"] = "text"  # type: ignore[assignment]
    t.keys(gt="text")  # type: ignore[call-overload]
    t.keys(limit="3")  # type: ignore[call-overload]
    t.keys(lmit=3)  # type: ignore[call-overload]
    snap[b"k"] = b"v"  # type: ignore[index]
    snap.cursor().seek("text")  # type: ignore[arg-type]
    t.get(b"k", buffer=True)  # type: ignore[call-overload]
    m: MutableMapping[str, bytes] = t  # type: ignore[assignment]
    next(t.keys())  # type: ignore[call-overload]
    t.update(name=b"v")  # type: ignore[call-arg]
    bale.Tree.open("p", key_codec="pickle")  # type: ignore[call-overload]
    bale.Tree.open("p", create="yes")  # type: ignore[call-overload]
    bale.Tree.open("p", bogus=1)  # type: ignore[call-overload]


def refused_for_objects(s: bale.ObjectStore) -> None:
    """Never called: each line is a type error mypy must find."""
    s.add("text")  # type: ignore[arg-type]
    s.get(3)  # type: ignore[arg-type]
    s.add_file(b"bytes")  # type: ignore[arg-type]
    s.get_range("id", 0)  # type: ignore[call-arg]
    s.repack("zstd")  # type: ignore[arg-type]
    s.export_to("path")  # type: ignore[arg-type]
    s.add_tree("dir", paths="paths.bale")  # type: ignore[arg-type]
    s.push("origin", refs=[("main", "id")])  # type: ignore[arg-type]
    s.pull("origin", True)  # type: ignore[call-arg]
    s.connect_remote("origin", "file:///b", grace="1h")  # type: ignore[arg-type]
    bale.ObjectStore("p", hash="md5")  # type: ignore[arg-type]
    bale.ObjectStore("p", True)  # type: ignore[call-arg]
