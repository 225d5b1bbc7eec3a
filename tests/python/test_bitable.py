"""Bitables (bale.Bitable, bale.BitableWriter, bale.UnsortedBitableWriter):
round trips against a dict model, every read against the model, large
values streamed both ways, argument and ordering errors, damaged files,
builds that end without a table, threads and fork."""

import bisect
import io
import os
import pickle
import random
from concurrent.futures import ThreadPoolExecutor

import pytest

import bale
from fork_checks import refused_after_fork


def noise(n, seed=0):
    return random.Random(seed).randbytes(n)


def random_model(seed, n, large_every=0):
    """Keys from a small alphabet (shared prefixes are common), including the
    empty key and keys of 1 KiB; values mostly small, some large."""
    rng = random.Random(seed)
    m = {b"": b"the empty key", b"\xff" * 1024: b"a 1 KiB key", b"a" * 1023 + b"b": b""}
    while len(m) < n:
        k = bytes(rng.choice(b"ab\x00\xff") for _ in range(rng.randrange(0, 12)))
        if large_every and rng.randrange(large_every) == 0:
            v = noise(rng.randrange(5_000, 200_000), rng.randrange(1 << 30))
        else:
            v = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 40)))
        m[k] = v
    return m


def build(path, model, streamed=(), **options):
    """Writes `model` in key order; the keys in `streamed` go through a file
    object or an iterable of chunks."""
    with bale.BitableWriter(path, **options) as w:
        for i, (k, v) in enumerate(sorted(model.items())):
            if k in streamed:
                src = io.BytesIO(v) if i % 2 else (v[j:j + 7000] for j in range(0, len(v), 7000))
                w.append(k, src)
            else:
                w.append(k, v)
        assert len(w) == len(model)
        return w.finish()


def check_model(t, model, seed=0):
    keys = sorted(model)
    rng = random.Random(seed)
    assert len(t) == len(model)
    assert list(t) == keys and list(t.keys()) == keys and list(reversed(t)) == keys[::-1]
    assert list(t.items()) == [(k, model[k]) for k in keys]
    assert list(t.values(reverse=True)) == [model[k] for k in reversed(keys)]
    for i, k in enumerate(keys):
        assert t[k] == model[k] and t.get(k) == model[k] and k in t
        assert t.rank(k) == i
        c = t.select(i)
        assert (c.key, c.value, c.ordinal, c.valid) == (k, model[k], i, True)
        assert t.find(k).key == k
    assert not t.select(len(keys)).valid and t.select(len(keys)).ordinal == len(keys)
    assert t.first().key == keys[0] and t.last().key == keys[-1]
    probes = keys + [k + b"\x00" for k in keys[:50]] + [k[:-1] for k in keys[:50] if k] + [b"\xff" * 2000]
    for p in probes:
        lo = bisect.bisect_left(keys, p)
        hi = bisect.bisect_right(keys, p)
        assert t.lower_bound(p).key == (keys[lo] if lo < len(keys) else None)
        assert t.upper_bound(p).key == (keys[hi] if hi < len(keys) else None)
        assert t.rank(p) == lo
        if p not in model:
            assert p not in t and t.get(p) is None and t.get(p, 7) == 7 and t.find(p) is None
            with pytest.raises(bale.NotFoundError) as e:
                t[p]
            assert isinstance(e.value, KeyError)
    for _ in range(40):
        a, b = sorted(rng.choice(probes) for _ in range(2))
        want = [k for k in keys if a <= k < b]
        assert [k for k, _ in t.range(a, b)] == want
        assert [k for k, _ in t.range(a, b, reverse=True)] == want[::-1]
        assert list(t.keys(start=a)) == [k for k in keys if k >= a]
        assert list(t.keys(stop=b, reverse=True)) == [k for k in reversed(keys) if k < b]
        assert list(t.keys(a, b, include_stop=True)) == [k for k in keys if a <= k <= b]
        assert list(t.keys(gt=a, lte=b)) == [k for k in keys if a < k <= b]
        offset, limit = rng.randrange(0, 40), rng.randrange(0, 40)
        assert list(t.keys(a, offset=offset, limit=limit)) == [k for k in keys if k >= a][offset:offset + limit]
        down = [k for k in reversed(keys) if a < k <= b]
        assert list(t.values(gt=a, lte=b, reverse=True, offset=offset)) == [model[k] for k in down[offset:]]
        p = a[:rng.randrange(0, 3)]
        assert list(t.prefix(p)) == [(k, model[k]) for k in keys if k.startswith(p)]
        assert [k for k, _ in t.prefix(p, reverse=True)] == [k for k in reversed(keys) if k.startswith(p)]
    # One cursor all the way forwards, then back.
    c, seen = t.first(), []
    while c.valid:
        seen.append(c.key)
        c.next()
    assert seen == keys and not c.next() and c.key is None and c.value is None
    assert c.last() and c.key == keys[-1]
    while c.prev():
        seen.pop()
    assert seen == [keys[0]] and not c.valid and c.ordinal == len(keys)
    assert c.seek(keys[len(keys) // 2]) and c.key == keys[len(keys) // 2]
    assert c.first() and c.key == keys[0]
    report = t.check()
    assert report.ok and report.entries_checked == len(keys) and report.problems == []


SHAPES = [
    dict(page_size=4096, align=1),
    dict(page_size=16384, align=8, compression="never"),
    dict(page_size=65536, align=256, compression="always"),
]


@pytest.mark.parametrize("options", SHAPES, ids=lambda o: f"{o['page_size']}-{o['align']}")
@pytest.mark.parametrize("mmap", [True, False])
def test_round_trip_against_a_dict(tmp_path, options, mmap):
    model = random_model(options["page_size"], 1500, large_every=300)
    large = {k for k, v in model.items() if len(v) > options["page_size"] // 4}
    assert large
    summary = build(tmp_path / "t.bitable", model, streamed=large, **options)
    assert summary.entries == len(model) and summary.depth >= 1
    assert summary.file_bytes == os.path.getsize(tmp_path / "t.bitable")
    assert os.listdir(tmp_path) == ["t.bitable"]
    with bale.Bitable.open(tmp_path / "t.bitable", mmap=mmap) as t:
        assert t.mapped == mmap and t.format_version == bale.BITABLE_FORMAT_VERSION == 1
        check_model(t, model)
        s = t.stats()
        assert (s.entries, s.page_size, s.align, s.large_values) == (len(model), options["page_size"],
                                                                      options["align"], len(large))
        assert s.completion == "durable" and s.level_pages[0] == s.leaf_pages and sum(s.level_pages) == (
            s.leaf_pages + s.branch_pages)
        assert s.longest_key == 1024 and s.value_bytes == sum(map(len, model.values()))
        assert list(s.to_dict())[-2:] == ["level_pages", "completion"]
        for k in large:
            with t.open_value(k) as f:
                assert isinstance(f, io.RawIOBase) and f.size == len(model[k])
                assert f.read(10) == model[k][:10]
                f.seek(-100, io.SEEK_END)
                assert f.read() == model[k][-100:] and f.read() == b""
                f.seek(70_000 % len(model[k]))
                assert io.BufferedReader(f).read() == model[k][70_000 % len(model[k]):]
            buf = bytearray(1000)
            f = t.open_value(k)
            assert f.readinto(buf) == 1000 and bytes(buf) == model[k][:1000]


def test_range_options_are_the_tree_stores(tmp_path):
    build(tmp_path / "t.bitable", {b"a": b"1", b"b": b"2"})
    with bale.Bitable.open(tmp_path / "t.bitable") as t:
        for bad in (dict(gt=b"a", gte=b"a"), dict(start=b"a", gte=b"a"), dict(end=b"b"), dict(limit=-1),
                    dict(offset=1.5), dict(lmit=2)):
            with pytest.raises(bale.InvalidArgumentError) as e:
                t.keys(**bad)
            assert not isinstance(e.value, TypeError), bad
        for bad in (dict(limit="3"), dict(reverse="yes"), dict(gt="a"), dict(prefix=3)):
            with pytest.raises(bale.InvalidTypeError):
                t.items(**bad)
        with pytest.raises(TypeError):
            t.prefix(b"a", prefix=b"b")
        assert list(t.keys(b"b", b"a")) == [] and list(t.keys(limit=0)) == [] and list(t.keys(offset=5)) == []
        assert list(t.prefix(b"b", reverse=True, limit=1)) == [(b"b", b"2")]


def test_an_empty_table(tmp_path):
    s = build(tmp_path / "e.bitable", {})
    assert (s.entries, s.depth) == (0, 0)
    with bale.Bitable.open(tmp_path / "e.bitable") as t:
        assert len(t) == 0 and list(t) == [] and list(t.range()) == [] and t.get(b"") is None
        assert not t.first().valid and not t.last().valid and t.rank(b"x") == 0 and t.find(b"") is None
        assert t.stats().level_pages == [] and t.check().ok


def test_values_small_and_large_in_every_form(tmp_path):
    big = noise(3 << 20, 1)
    with bale.BitableWriter(tmp_path / "v.bitable", compression="auto") as w:
        assert w.max_key_len == 1024
        w.append(b"a-bytes", b"x" * 1024)  # the inline limit exactly
        w.append(b"b-bytearray", bytearray(b"y" * 1025))  # one past: a large value
        w.append(b"c-memoryview", memoryview(b"0123456789")[2:6])
        w.append(b"d-file", io.BytesIO(big))
        w.append(b"e-chunks", iter([b"", big[:10], b"", memoryview(big)[10:1 << 20], big[1 << 20:]]))
        w.append(b"f-empty-chunks", [b"", b""])
        w.append(b"g-generator", (bytes([i]) * 100 for i in range(200)))
        w.append(b"h-empty-file", io.BytesIO())
        w.finish()
    with bale.Bitable.open(tmp_path / "v.bitable") as t:
        assert t[b"a-bytes"] == b"x" * 1024 and t[b"b-bytearray"] == b"y" * 1025
        assert t[b"c-memoryview"] == b"2345" and t[b"d-file"] == big and t[b"e-chunks"] == big
        assert t[b"f-empty-chunks"] == b"" and t[b"h-empty-file"] == b""
        assert t[b"g-generator"] == b"".join(bytes([i]) * 100 for i in range(200))
        assert t.stats().large_values == 4
        # Large values are refused above the limit, and streamed instead.
        with pytest.raises(bale.TooLargeError, match="open_value"):
            t.get(b"d-file", max_size=len(big) - 1)
        assert t.get(b"d-file", max_size=len(big)) == big and t.get(b"d-file", max_size=None) == big
        assert t.get(b"a-bytes", max_size=0) == b"x" * 1024  # inline values are always returned
        with t.open_value(b"e-chunks") as f:
            assert f.read(5) == big[:5] and f.tell() == 5 and f.seek(1 << 20) == 1 << 20
            assert f.read(3) == big[1 << 20:(1 << 20) + 3]
        with t.open_value(b"c-memoryview") as f:
            assert f.read() == b"2345"
        with pytest.raises(ValueError):
            f.read()
        with pytest.raises(bale.NotFoundError):
            t.open_value(b"zz")


def test_views_point_into_the_map_and_outlive_the_handle(tmp_path):
    build(tmp_path / "t.bitable", {b"k": b"value", b"large": noise(10_000)})
    t = bale.Bitable.open(tmp_path / "t.bitable")
    v = t.get(b"k", buffer=True)
    assert isinstance(v, bale.BitableView) and v.zero_copy and v == b"value" and len(v) == 5
    assert v[0] == ord("v") and v[-1] == ord("e") and v[1:3] == b"al" and bytes(v) == b"value"
    large = t.get(b"large", buffer=True)
    assert not large.zero_copy and large == noise(10_000)
    assert t.get(b"missing", buffer=True) is None and t.get(b"missing", 3, buffer=True) == 3
    m = memoryview(v)
    t.close()
    assert t.closed and m.tobytes() == b"value" and v.tobytes() == b"value" and m.readonly
    with pytest.raises(TypeError):
        io.BytesIO(b"xyz").readinto(v)  # a writable buffer is refused
    with bale.Bitable.open(tmp_path / "t.bitable", mmap=False) as u:
        w = u.get(b"k", buffer=True)
        assert not w.zero_copy and w == b"value"


def test_order_and_size_errors_keep_the_build_going(tmp_path):
    with bale.BitableWriter(tmp_path / "o.bitable") as w:
        w.append(b"b", b"1")
        for bad in (b"b", b"a", b""):
            with pytest.raises(bale.InvalidArgumentError) as e:
                w.append(bad, b"2")
            assert e.value.code == "INVALID_ARGUMENT" and not isinstance(e.value, TypeError)
            assert "ascending" in e.value.message
        with pytest.raises(bale.TooLargeError) as e:
            w.append(b"c" * 1025, b"")
        assert e.value.code == "TOO_LARGE"
        w.append(b"c" * 1024, b"3")
        assert len(w) == 2
        w.finish()
    with bale.Bitable.open(tmp_path / "o.bitable") as t:
        assert dict(t.items()) == {b"b": b"1", b"c" * 1024: b"3"}


def test_argument_types_and_values(tmp_path):
    p = tmp_path / "a.bitable"
    for kw in (dict(page_size="4096"), dict(align=1.0), dict(compression=3), dict(page_size=[])):
        with pytest.raises(bale.InvalidTypeError):
            bale.BitableWriter(p, **kw)
    for kw in (dict(page_size=1000), dict(page_size=131072), dict(page_size=-1), dict(align=3), dict(align=512),
               dict(compression="zstd"), dict(page_size=1 << 40)):
        with pytest.raises(bale.InvalidArgumentError) as e:
            bale.BitableWriter(p, **kw)
        assert not isinstance(e.value, TypeError) and e.value.code == "INVALID_ARGUMENT", kw
    with pytest.raises(bale.InvalidTypeError):
        bale.BitableWriter(42)
    assert os.listdir(tmp_path) == []
    with bale.BitableWriter(p) as w:
        for key in ("text", 1, None):
            with pytest.raises(bale.InvalidTypeError, match="bytes-like"):
                w.append(key, b"v")
        for value in ("text", 1, None, 2.5):
            with pytest.raises(bale.InvalidTypeError, match="binary file object"):
                w.append(b"k", value)
        with pytest.raises(bale.InvalidTypeError, match="chunks of bytes"):
            w.append(b"k", ["text"])
        with pytest.raises(bale.InvalidTypeError, match="binary file"):
            w.append(b"k", io.StringIO("text"))
        w.append(b"k", b"v")
        for bad in (dict(durable="yes"),):
            with pytest.raises(bale.InvalidTypeError):
                w.finish(**bad)
        w.finish(durable=False)
    with bale.Bitable.open(p) as t:
        assert t.stats().completion == "fast"
        for key in ("k", 1):
            for op in (lambda: t[key], lambda: t.get(key), lambda: key in t, lambda: t.lower_bound(key),
                       lambda: t.range(key), lambda: t.prefix(key), lambda: t.rank(key), lambda: t.open_value(key)):
                with pytest.raises(bale.InvalidTypeError):
                    op()
        with pytest.raises(bale.InvalidTypeError):
            t.select("1")
        with pytest.raises(bale.InvalidArgumentError):
            t.select(-1)
        with pytest.raises(bale.InvalidTypeError):
            t.get(b"k", max_size="1")
        with pytest.raises(bale.InvalidTypeError):
            t.check(progress=5)
        with pytest.raises(bale.InvalidTypeError, match="open it there"):
            pickle.dumps(t)
    with pytest.raises(bale.InvalidTypeError):
        bale.Bitable.open(p, mmap="no")


def test_a_file_object_that_raises(tmp_path):
    class Failing(io.RawIOBase):
        def __init__(self, good):
            self.good = good

        def readable(self):
            return True

        def read(self, n=-1):
            if self.good <= 0:
                raise ZeroDivisionError("from read")
            n = min(n, self.good, 100_000)
            self.good -= n
            return b"z" * n

    with bale.BitableWriter(tmp_path / "f.bitable") as w:
        # Failing at once: nothing of the pair is written and the build goes on.
        with pytest.raises(ZeroDivisionError):
            w.append(b"a", Failing(0))
        with pytest.raises(ZeroDivisionError):
            w.append(b"a", (b"x" if i == 0 else 1 // 0 for i in range(2)))
        w.append(b"a", b"1")
        # Failing in the middle of a large value: the pair is left out too.
        with pytest.raises(ZeroDivisionError):
            w.append(b"b", Failing(300_000))
        with pytest.raises(ZeroDivisionError):
            w.append(b"b", (b"y" * 70_000 if i < 3 else 1 // 0 for i in range(5)))
        w.append(b"b", io.BytesIO(noise(200_000)))
        w.append(b"c", b"3")
        w.finish()
    with bale.Bitable.open(tmp_path / "f.bitable") as t:
        assert list(t.items()) == [(b"a", b"1"), (b"b", noise(200_000)), (b"c", b"3")]
        assert t.check().ok and t.stats().large_values == 1


def test_leaving_a_with_block_without_finish_leaves_nothing(tmp_path):
    p = tmp_path / "d.bitable"
    with pytest.raises(RuntimeError):
        with bale.BitableWriter(p) as w:
            w.append(b"a", b"1")
            w.append(b"b", noise(100_000))  # a spilled large value too
            raise RuntimeError("stop")
    assert os.listdir(tmp_path) == [] and w.closed
    with bale.BitableWriter(p) as w:
        w.append(b"a", b"1")
    assert os.listdir(tmp_path) == []
    with pytest.raises(bale.ClosedError, match="ended"):
        w.append(b"b", b"2")
    # An existing table is replaced at finish only.
    build(p, {b"old": b"table"})
    w = bale.BitableWriter(p)
    w.append(b"new", b"pairs")
    assert len(os.listdir(tmp_path)) == 2 and dict(bale.Bitable.open(p).items()) == {b"old": b"table"}
    w.discard()
    w.discard()  # once ended, nothing to do
    assert os.listdir(tmp_path) == ["d.bitable"] and w.closed and "ended" in repr(w)
    w = bale.BitableWriter(p)
    w.append(b"new", b"pairs")
    del w  # garbage collected: discarded
    assert os.listdir(tmp_path) == ["d.bitable"]
    with bale.BitableWriter(p) as w:
        w.append(b"new", b"pairs")
        w.finish()
        with pytest.raises(bale.ClosedError):
            w.finish()
    assert os.listdir(tmp_path) == ["d.bitable"] and dict(bale.Bitable.open(p).items()) == {b"new": b"pairs"}


def test_damaged_files_raise_typed_errors(tmp_path):
    model = {b"%05d" % i: b"value %d" % i for i in range(3000)}
    model[b"large"] = noise(200_000)
    p = tmp_path / "t.bitable"
    build(p, model)
    good = p.read_bytes()
    with pytest.raises(bale.NotFoundError) as e:
        bale.Bitable.open(tmp_path / "missing.bitable")
    assert e.value.code == "NOT_FOUND" and str(tmp_path) in e.value.message
    # Cut short: the header records a longer file.
    p.write_bytes(good[:len(good) // 2])
    with pytest.raises(bale.CorruptError) as e:
        bale.Bitable.open(p)
    assert e.value.code == "CORRUPT"
    (tmp_path / "text.bitable").write_bytes(b"hello, not a table" * 300)
    with pytest.raises(bale.NotABaleFileError):
        bale.Bitable.open(tmp_path / "text.bitable")
    (tmp_path / "empty.bitable").write_bytes(b"")
    with pytest.raises(bale.BaleError):
        bale.Bitable.open(tmp_path / "empty.bitable")
    # A tree store is a bale file of another kind.
    with bale.Tree.open(tmp_path / "tree.bale", create=True) as tree:
        tree[b"k"] = b"v"
    with pytest.raises(bale.InvalidArgumentError, match="not a bitable"):
        bale.Bitable.open(tmp_path / "tree.bale")
    # One flipped byte in leaf page 2: reads of that page fail, check lists it.
    damaged = bytearray(good)
    damaged[2 * 4096 + 100] ^= 0x40
    p.write_bytes(bytes(damaged))
    for mmap in (True, False):
        with bale.Bitable.open(p, mmap=mmap) as t:
            with pytest.raises(bale.ChecksumMismatchError) as e:
                list(t.items())
            assert e.value.code == "CHECKSUM_MISMATCH" and e.value.page == 2
            report = t.check()
            assert not report.ok and report.problem_count >= 1
            problem = report.problems[0]
            assert isinstance(problem, bale.BitableProblem) and problem.page == 2
            assert problem.code == "CHECKSUM_MISMATCH" and "page 2" in problem.message
            # Pages elsewhere still read.
            assert t[b"00000"] == b"value 0"
    # A flipped bit in a large value's first block (the value region ends the file).
    p.write_bytes(good)
    with bale.Bitable.open(p) as t:
        s = t.stats()
    damaged = bytearray(good)
    damaged[s.file_bytes - s.value_region_bytes + 100] ^= 1
    p.write_bytes(bytes(damaged))
    with bale.Bitable.open(p) as t:
        assert t[b"00001"] == b"value 1"
        with pytest.raises(bale.ChecksumMismatchError):
            t[b"large"]
        with pytest.raises(bale.ChecksumMismatchError):
            t.open_value(b"large").read()
        report = t.check()
        assert report.problems[0].code == "CHECKSUM_MISMATCH" and report.problem_count == len(report.problems) > 1


def test_check_reports_progress(tmp_path):
    build(tmp_path / "t.bitable", {b"%06d" % i: b"v" * 50 for i in range(60_000)})
    calls = []
    with bale.Bitable.open(tmp_path / "t.bitable") as t:
        report = t.check(progress=lambda done, total: calls.append((done, total)))
        assert report.ok and len(calls) >= 2 and calls[-1] == (report.pages_checked, report.pages_checked)
        assert [d for d, _ in calls] == sorted(d for d, _ in calls)

        def failing(done, total):
            calls.append("called")
            raise ZeroDivisionError

        calls.clear()
        with pytest.raises(ZeroDivisionError):
            t.check(failing)
        assert calls == ["called"]  # not called again after it raised


def test_closed_tables_and_what_outlives_them(tmp_path):
    model = {b"%03d" % i: b"v%d" % i for i in range(500)}
    model[b"large"] = noise(50_000)
    build(tmp_path / "t.bitable", model)
    t = bale.Bitable.open(tmp_path / "t.bitable")
    c = t.lower_bound(b"100")
    it = t.keys()
    f = t.open_value(b"large")
    assert next(it) == b"000"
    t.close()
    t.close()
    assert t.closed and "closed" in repr(t)
    for op in (lambda: t[b"000"], lambda: len(t), lambda: t.get(b"000"), lambda: list(t), lambda: t.stats(),
               lambda: t.check(), lambda: t.first()):
        with pytest.raises(bale.ClosedError):
            op()
    assert c.key == b"100" and c.next() and c.key == b"101"
    assert next(it) == b"001" and len(list(it)) == len(model) - 2
    assert f.read() == model[b"large"]
    it2 = bale.Bitable.open(tmp_path / "t.bitable").keys()
    it2.close()
    assert list(it2) == []


def test_threads_read_one_table_alike(tmp_path):
    model = random_model(7, 3000, large_every=500)
    build(tmp_path / "t.bitable", model)
    keys = sorted(model)

    def read_all(t, seed):
        rng = random.Random(seed)
        out = [len(t), list(t.items())]
        for k in rng.sample(keys, 300):
            c = t.lower_bound(k)
            out.append((t.get(k), t.rank(k), c.key, c.next(), c.key, k in t))
        for k in keys:
            if len(model[k]) > 1024:
                out.append(t.open_value(k).read())
        out.append(t.check().ok)
        return out

    for mmap in (True, False):
        with bale.Bitable.open(tmp_path / "t.bitable", mmap=mmap) as t:
            want = read_all(t, 1)
            with ThreadPoolExecutor(max_workers=8) as pool:
                results = list(pool.map(lambda _: read_all(t, 1), range(8)))
            assert all(r == want for r in results)
            assert want[1] == sorted(model.items())


def test_unsorted_writer(tmp_path):
    rng = random.Random(3)
    pairs = [(b"%d" % rng.randrange(4000), noise(rng.randrange(0, 60), i)) for i in range(20_000)]
    pairs += [(b"large-%d" % i, noise(30_000, i)) for i in range(3)]
    rng.shuffle(pairs)
    model = dict(pairs)  # the last added wins
    p = tmp_path / "u.bitable"
    with bale.UnsortedBitableWriter(p, memory_budget=1 << 16, page_size=8192) as w:
        for i, (k, v) in enumerate(pairs):
            w.add(k, io.BytesIO(v) if k.startswith(b"large") and i % 2 else v)
        assert len(w) == len(pairs) and w.runs >= 2
        s = w.finish()
    assert s.entries == len(model) and os.listdir(tmp_path) == ["u.bitable"]
    with bale.Bitable.open(p) as t:
        assert list(t.items()) == sorted(model.items()) and t.stats().page_size == 8192
    with bale.UnsortedBitableWriter(p, on_duplicate="error") as w:
        w.add(b"b", b"1")
        w.add(b"a", [b"2"])
        w.add(b"b", b"3")
        with pytest.raises(bale.InvalidArgumentError, match="more than once"):
            w.finish()
    assert os.listdir(tmp_path) == ["u.bitable"]
    with bale.UnsortedBitableWriter(p) as w:
        w.add(b"x", b"1")  # left without finish: nothing changes
    assert os.listdir(tmp_path) == ["u.bitable"] and bale.Bitable.open(p).get(b"x") is None
    for kw in (dict(memory_budget=1000), dict(on_duplicate="oldest"), dict(memory_budget=-1)):
        with pytest.raises(bale.InvalidArgumentError):
            bale.UnsortedBitableWriter(p, **kw)
    with pytest.raises(bale.InvalidTypeError):
        bale.UnsortedBitableWriter(p, memory_budget="1M")


def test_merge_and_append_tree(tmp_path):
    old = {b"%03d" % i: b"old" for i in range(0, 300, 2)}
    new = {b"%03d" % i: b"new" for i in range(0, 300, 3)}
    new[b"large"] = noise(100_000)
    build(tmp_path / "old.bitable", old)
    build(tmp_path / "new.bitable", new)
    a, b = bale.Bitable.open(tmp_path / "old.bitable"), bale.Bitable.open(tmp_path / "new.bitable", mmap=False)
    with bale.BitableWriter(tmp_path / "m.bitable") as w:
        w.append(b"", b"first")
        assert w.merge([a, b]) == len({**old, **new})
        assert len(w) == len({**old, **new}) + 1
        w.finish()
    with bale.Bitable.open(tmp_path / "m.bitable") as t:
        assert dict(t.items()) == {b"": b"first", **old, **new}
    with bale.BitableWriter(tmp_path / "e.bitable") as w:
        with pytest.raises(bale.InvalidArgumentError, match="both hold"):
            w.merge(iter([a, b]), on_duplicate="error")
        with pytest.raises(bale.InvalidTypeError):
            w.merge([a, "b"])
        with pytest.raises(bale.InvalidArgumentError):
            w.merge([a], on_duplicate="first")
    assert not (tmp_path / "e.bitable").exists()
    with bale.Tree.open(tmp_path / "tree.bale", create=True) as tree:
        tree.update({b"k%d" % i: b"v%d" % i for i in range(1000)})
        tree[b"big"] = noise(300_000)
        with bale.BitableWriter(tmp_path / "x.bitable") as w:
            assert w.append_tree(tree) == 1001
            w.finish()
        with bale.Bitable.open(tmp_path / "x.bitable") as t:
            assert list(t.items()) == list(tree.items())
        with pytest.raises(bale.InvalidTypeError):
            bale.BitableWriter(tmp_path / "y.bitable").append_tree(a)


def test_a_table_works_in_a_forked_child_and_a_build_does_not(tmp_path):
    model = {b"%03d" % i: b"v%d" % i for i in range(300)}
    build(tmp_path / "t.bitable", model)
    t = bale.Bitable.open(tmp_path / "t.bitable")
    w = bale.BitableWriter(tmp_path / "w.bitable")
    w.append(b"a", b"1")
    pid = os.fork()
    if pid == 0:  # the child: report through the exit code only
        code = 0
        try:
            if dict(t.items()) != model or t[b"007"] != b"v7" or not t.check().ok:
                code = 10
            else:
                code = refused_after_fork([lambda: w.append(b"b", b"2"), lambda: w.finish(), lambda: w.discard()])
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    # The child dropped nothing of the parent's build.
    w.append(b"b", b"2")
    w.finish()
    assert dict(bale.Bitable.open(tmp_path / "w.bitable").items()) == {b"a": b"1", b"b": b"2"}
