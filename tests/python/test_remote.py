"""Remotes of the object store, through a folder used as a bucket
(file://): connecting, push and pull round trips, lazy pulls and fetches,
refs, gc, progress callbacks, errors, and pushes from several stores at
once."""

import os
import random
import threading
import time

import pytest

import bale

SMALL = dict(chunk_min=1024, chunk_avg=4096, chunk_max=16384, fanout=16)


def noise(n, seed):
    return random.Random(seed).randbytes(n)


def contents(seed):
    """Small objects, a compressible one, and two chunked ones."""
    out = [noise(50 + i * 97, seed * 100 + i) for i in range(20)]
    out.append(f"object {seed} ".encode() * 500)
    out += [noise(150_000, seed * 100 + 50), noise(90_000, seed * 100 + 51)]
    return out


@pytest.fixture
def bucket(tmp_path):
    return tmp_path / "bucket"


@pytest.fixture
def url(bucket):
    return f"file://{bucket}"


@pytest.fixture
def stores(tmp_path):
    """Opens stores under tmp_path by name, closing them at the end."""
    opened = []

    def make(name):
        s = bale.ObjectStore(tmp_path / name, create=True, **SMALL)
        opened.append(s)
        return s

    yield make
    for s in opened:
        s.close()


def test_push_then_pull_round_trips_every_object(stores, url, bucket):
    a, b = stores("a"), stores("b")
    data = contents(1)
    ids = a.add_many(data)
    assert a.connect_remote("origin", url) is None
    b.connect_remote("origin", url)
    assert (bucket / "manifest").is_file()

    seen = []
    pushed = a.push("origin", progress=lambda done, total: seen.append((done, total)))
    assert isinstance(pushed, bale.PushReport)
    assert pushed.objects_sent == len(set(ids)) and pushed.objects_present == 0
    assert pushed.generation == 1 and pushed.attempts == 1 and pushed.revived == 0
    assert pushed.records_sent > len(ids) and pushed.bytes_sent > sum(map(len, data)) // 2
    assert len(pushed.packs) == 1 and len(pushed.packs[0]) == 64
    assert (bucket / "packs" / f"{pushed.packs[0]}.pack").is_file()
    assert seen == [(1, 1)]
    assert list(pushed.to_dict()) == ["objects_sent", "objects_present", "records_sent", "bytes_sent", "revived",
                                      "attempts", "generation", "packs"]
    assert repr(pushed).startswith("PushReport(objects_sent=")

    seen.clear()
    pulled = b.pull("origin", progress=lambda done, total: seen.append((done, total)))
    assert isinstance(pulled, bale.PullReport)
    assert pulled.objects_fetched == len(ids) and pulled.objects_present == 0
    assert pulled.records_fetched == pushed.records_sent and pulled.generation == 1
    assert pulled.reads >= 1 and pulled.bytes_received > 0
    assert seen == [(1, 1)]
    assert sorted(b.ids()) == sorted(ids)
    for i, d in zip(ids, data):
        assert b.get(i, verify=True) == d
    assert b.validate().ok

    # Nothing left to send or fetch: nothing is committed.
    again = a.push("origin")
    assert (again.objects_sent, again.objects_present, again.generation, again.packs) == (0, len(ids), 1, [])
    assert b.pull("origin").objects_fetched == 0

    # Back the other way: b's new object reaches a.
    new = b.add(b"made in b")
    assert b.push("origin", [new]).generation == 2
    assert a.fetch("origin", [new]).objects_fetched == 1
    assert a.get(new) == b"made in b"


def test_remotes_are_recorded_listed_and_removed(stores, url, tmp_path):
    s = stores("s")
    assert s.remotes() == {}
    s.connect_remote("origin", url)
    s.connect_remote("backup", f"file://{tmp_path / 'other-bucket'}", grace=90)
    assert s.remotes() == {
        "backup": {"url": f"file://{tmp_path / 'other-bucket'}", "endpoint": None, "region": None, "path_style": None},
        "origin": {"url": url, "endpoint": None, "region": None, "path_style": None},
    }
    assert s.remote_info("backup").grace == 90.0
    assert s.remote_info("origin").grace == 24 * 3600.0
    with pytest.raises(bale.ConflictError):
        s.connect_remote("origin", url)
    s.remove_remote("backup")
    assert list(s.remotes()) == ["origin"]
    with pytest.raises(bale.NotFoundError):
        s.remove_remote("backup")
    # The bucket outlives the record: connecting again joins it.
    s.push("origin", [s.add(b"kept")])
    s.remove_remote("origin")
    s.connect_remote("origin", url)
    assert s.remote_info("origin").generation == 1


def test_a_lazy_pull_reads_indexes_and_get_fetches_on_demand(stores, url):
    a, b = stores("a"), stores("b")
    data = contents(2)
    ids = a.add_many(data)
    a.connect_remote("origin", url)
    a.push("origin")
    b.connect_remote("origin", url)

    seen = []
    lazy = b.pull("origin", lazy=True, progress=lambda d, t: seen.append((d, t)))
    assert (lazy.objects_fetched, lazy.records_fetched, lazy.reads, lazy.generation) == (0, 0, 0, 1)
    assert lazy.bytes_received > 0 and seen == []
    assert len(b) == 0

    with pytest.raises(bale.NotFoundError):
        b.get(ids[0])
    assert b.get(ids[0], remote="origin") == data[0]
    assert b.has(ids[0]) and len(b) == 1
    # A chunked object comes with every chunk under it.
    assert b.get(ids[-1], remote="origin", verify=True) == data[-1]
    assert b.meta(ids[-1]).chunked
    # One the store has is read without the remote.
    assert b.get(ids[0], remote="origin") == data[0]

    got = b.fetch("origin", ids[1:4] + [ids[0]])
    assert (got.objects_fetched, got.objects_present) == (3, 1) and got.reads >= 1
    assert b.validate().ok
    absent = "00" * 32
    with pytest.raises(bale.NotFoundError):
        b.fetch("origin", [absent])
    with pytest.raises(bale.NotFoundError):
        b.get(absent, remote="origin")


def test_refs_are_committed_with_the_push(stores, url):
    a = stores("a")
    one, two = a.add(b"one"), a.add(noise(40_000, 3))
    a.connect_remote("origin", url)
    a.push("origin", [one], refs={"main": one, "tags/v1": one})
    info = a.remote_info("origin")
    assert isinstance(info, bale.RemoteInfo)
    assert info.refs == {"main": one, "tags/v1": one}
    assert (info.name, info.url, info.hash, info.generation) == ("origin", url, "blake3", 1)
    assert (info.packs, info.tombstones, info.objects, info.tombstoned_bytes) == (1, 0, 1, 0)
    assert info.records == 1 and info.bytes > 0
    assert list(info.to_dict()) == ["name", "url", "hash", "generation", "packs", "tombstones", "objects",
                                    "records", "bytes", "tombstoned_bytes", "grace", "refs"]

    # A ref alone is a commit; it must name an object the push sends or
    # the remote has.
    moved = a.push("origin", [], refs={"release": one})
    assert moved.objects_sent == 0 and moved.generation == 2
    assert a.remote_info("origin").refs == {"main": one, "release": one, "tags/v1": one}
    with pytest.raises(bale.NotFoundError):
        a.push("origin", [], refs={"main": two})
    # Refs without ids: every object is pushed with them.
    pushed = a.push("origin", refs={"main": two})
    assert pushed.objects_sent == 1 and pushed.generation == 3
    info = a.remote_info("origin")
    assert info.objects == 2 and info.refs == {"main": two, "release": one, "tags/v1": one}

    with pytest.raises(bale.InvalidArgumentError):
        a.push("origin", refs={"has space": one})
    with pytest.raises(bale.InvalidTypeError):
        a.push("origin", refs=[("main", one)])
    with pytest.raises(bale.InvalidTypeError):
        a.push("origin", refs={1: one})
    with pytest.raises(bale.InvalidArgumentError):
        a.push("origin", refs={"main": "xyz"})
    assert a.remote_info("origin").generation == 3


def test_gc_dry_run_reports_and_changes_nothing(stores, url, bucket):
    a = stores("a")
    a.connect_remote("origin", url, grace=3600)
    a.push("origin", a.add_many(contents(4)))
    # A pack no manifest names, as a push that died leaves, two hours ago.
    orphan = "ab" * 32
    (bucket / "packs" / f"{orphan}.pack").write_bytes(b"left by a dead push")
    (bucket / "packs" / f"{orphan}.idx").write_bytes(b"its index")
    past = time.time() - 7200
    for ext in ("pack", "idx"):
        os.utime(bucket / "packs" / f"{orphan}.{ext}", (past, past))
    # A younger one may belong to a push under way: it stays.
    young = "cd" * 32
    (bucket / "packs" / f"{young}.pack").write_bytes(b"a push under way")

    dry = a.remote_gc("origin", dry_run=True)
    assert isinstance(dry, bale.RemoteGcReport)
    assert (dry.tombstoned, dry.deleted, dry.orphans_deleted) == ([], [], [orphan])
    assert dry.bytes_freed == len(b"left by a dead push") + len(b"its index")
    assert dry.generation == 1 and dry.uploads_aborted == 0
    assert (bucket / "packs" / f"{orphan}.pack").is_file()
    assert a.remote_info("origin").generation == 1
    assert list(dry.to_dict())[:3] == ["tombstoned", "deleted", "orphans_deleted"]

    done = a.remote_gc("origin")
    assert done.orphans_deleted == [orphan] and done.bytes_freed == dry.bytes_freed
    assert not (bucket / "packs" / f"{orphan}.pack").exists()
    assert not (bucket / "packs" / f"{orphan}.idx").exists()
    assert (bucket / "packs" / f"{young}.pack").is_file()
    assert a.remote_gc("origin").orphans_deleted == []
    # What was pushed is untouched.
    b = stores("b")
    b.connect_remote("origin", url)
    assert b.pull("origin").objects_fetched == len(set(a.ids()))


def test_errors_have_their_classes(stores, url, bucket, tmp_path):
    s = stores("s")
    oid = s.add(b"x")
    for call in (lambda: s.push("nope"), lambda: s.pull("nope"), lambda: s.fetch("nope", [oid]),
                 lambda: s.remote_info("nope"), lambda: s.remote_gc("nope"), lambda: s.remove_remote("nope"),
                 lambda: s.get("00" * 32, remote="nope")):
        with pytest.raises(bale.NotFoundError) as e:
            call()
        assert e.value.code == "NOT_FOUND" and "nope" in e.value.message
    # An object the store has is read without the remote.
    assert s.get(oid, remote="nope") == b"x"

    for bad in ("http://example.com/b", "file://relative/path", "s3://Bad_Bucket/p", "s3://", "bucket"):
        with pytest.raises(bale.InvalidArgumentError):
            s.connect_remote("origin", bad)
    for bad_name in ("", ".hidden", "a/b", "x" * 65):
        with pytest.raises(bale.InvalidArgumentError):
            s.connect_remote(bad_name, url)
    # The S3 client is built in: an s3:// url's endpoint is read (and this
    # one refused) before any request.
    with pytest.raises(bale.InvalidArgumentError) as e:
        s.connect_remote("origin", "s3://bucket/prefix", endpoint="ftp://host")
    assert "http" in e.value.message
    assert s.remotes() == {}

    with pytest.raises(bale.InvalidTypeError):
        s.connect_remote(3, url)
    with pytest.raises(bale.InvalidTypeError):
        s.connect_remote("origin", url, grace="1h")
    with pytest.raises(bale.InvalidArgumentError):
        s.connect_remote("origin", url, grace=-1)
    with pytest.raises(bale.InvalidTypeError):
        s.connect_remote("origin", url, path_style="yes")
    assert s.remotes() == {}

    s.connect_remote("origin", url)
    with pytest.raises(bale.InvalidTypeError):
        s.push(b"origin")
    with pytest.raises(bale.InvalidTypeError):
        s.push("origin", oid)
    with pytest.raises(bale.InvalidTypeError):
        s.push("origin", progress="not callable")
    with pytest.raises(bale.InvalidArgumentError):
        s.push("origin", threads=0)
    with pytest.raises(bale.InvalidTypeError):
        s.pull("origin", threads="4")

    # A damaged manifest: cut short, a byte changed, or garbage.
    good = (bucket / "manifest").read_bytes()
    other = stores("other")
    for damaged, error in ((good[:80], bale.CorruptError),
                           (good[:-1] + bytes([good[-1] ^ 1]), bale.ChecksumMismatchError),
                           (noise(300, 5), bale.NotABaleFileError)):
        (bucket / "manifest").write_bytes(damaged)
        for call in (lambda: s.push("origin"), lambda: s.pull("origin"), lambda: s.pull("origin", lazy=True),
                     lambda: s.remote_info("origin"), lambda: s.remote_gc("origin", dry_run=True)):
            with pytest.raises(error) as e:
                call()
            assert "manifest" in e.value.message
        # Joining a remote whose manifest is damaged records nothing.
        with pytest.raises(error):
            other.connect_remote("origin", url)
        assert other.remotes() == {}

    # Remotes need a directory store.
    single = bale.ObjectStore(tmp_path / "single.bale", create=True, single_file=True)
    with single:
        with pytest.raises(bale.InvalidArgumentError):
            single.connect_remote("origin", url)
        with pytest.raises(bale.InvalidArgumentError):
            single.remotes()

    s.close()
    with pytest.raises(bale.ClosedError):
        s.push("origin")
    with pytest.raises(bale.ClosedError):
        s.remotes()


def test_an_exception_from_progress_is_raised_after_the_push_commits(stores, url):
    a = stores("a")
    a.add_many(contents(6))
    a.connect_remote("origin", url)
    calls = []

    def progress(done, total):
        calls.append((done, total))
        raise RuntimeError("stop telling me")

    with pytest.raises(RuntimeError, match="stop telling me"):
        a.push("origin", progress=progress)
    assert calls == [(1, 1)]
    assert a.remote_info("origin").generation == 1


def test_pushes_from_many_stores_at_once_all_land(stores, url, tmp_path):
    n = 6
    pushers = [stores(f"p{i}") for i in range(n)]
    expected = {}
    for i, s in enumerate(pushers):
        for d in contents(10 + i)[:8]:
            expected[s.add(d)] = d
        s.connect_remote("origin", url)
    barrier = threading.Barrier(n)
    reports, failures = [None] * n, []

    def push(i):
        try:
            barrier.wait()
            reports[i] = pushers[i].push("origin", refs={f"p{i}": pushers[i].ids()[0]}, threads=2)
        except BaseException as e:  # noqa: BLE001 - reported below
            failures.append(e)

    threads = [threading.Thread(target=push, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    # Every push committed once, each on its own generation.
    assert sorted(r.generation for r in reports) == list(range(1, n + 1))
    assert sum(r.objects_sent for r in reports) == len(expected)
    info = pushers[0].remote_info("origin")
    assert info.generation == n and info.objects == len(expected) and len(info.refs) == n

    reader = stores("reader")
    reader.connect_remote("origin", url)
    assert reader.pull("origin", threads=3).objects_fetched == len(expected)
    for oid, d in expected.items():
        assert reader.get(oid) == d
    assert os.path.isdir(tmp_path / "reader" / "remotes" / "origin")
