"""ObjectStore.get_many as a real iterator: each object is read when the
iteration reaches it (so a bulk read holds one object at a time), each step
is a call on the store, and an error is raised again by every later step."""

import subprocess
import sys
import textwrap

import pytest

import bale


@pytest.fixture
def store(tmp_path):
    with bale.ObjectStore(tmp_path / "objects", create=True) as s:
        yield s


def test_get_many_yields_one_by_one_and_ends_with_the_store(store):
    ids = [store.add(b"object %d" % i) for i in range(5)]
    it = store.get_many(ids)
    assert it.__length_hint__() == 5
    assert next(it) == (ids[0], b"object 0")
    assert it.__length_hint__() == 4
    store.close()
    # The rest would be read from a closed store.
    with pytest.raises(bale.ClosedError):
        next(it)
    with pytest.raises(bale.ClosedError):
        next(it)


def test_an_exhausted_iterator_stays_exhausted(store):
    oid = store.add(b"x")
    it = store.get_many([oid])
    assert list(it) == [(oid, b"x")]
    assert next(it, None) is None and it.__length_hint__() == 0


def test_a_damaged_object_raises_when_reached_and_again_after(tmp_path):
    path = tmp_path / "objects"
    with bale.ObjectStore(path, create=True, compression="never") as s:
        ids = [s.add(b"object number %d" % i) for i in range(3)]
        s.pack()
        it = s.get_many(ids, skip_missing=True)
        assert next(it) == (ids[0], b"object number 0")
        # The second object's bytes in its pack change under the iteration.
        (pack,) = (path / "packs").glob("*.pack")
        data = pack.read_bytes()
        at = data.index(b"object number 1")
        pack.write_bytes(data[:at] + b"O" + data[at + 1:])
        with pytest.raises(bale.ChecksumMismatchError):
            next(it)
        with pytest.raises(bale.ChecksumMismatchError):  # raised again, not skipped
            next(it)


def test_a_bulk_read_holds_one_object_at_a_time(tmp_path):
    # A fresh process, so that its peak resident size measures this read
    # alone: 48 objects of 2 MiB read through get_many, each dropped in turn.
    script = textwrap.dedent(
        """
        import os, resource, sys
        import bale
        with bale.ObjectStore(sys.argv[1], create=True) as s:
            ids = [s.add(os.urandom(2 << 20)) for _ in range(48)]
            s.pack()
            before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            n = sum(len(data) for _, data in s.get_many(ids))
            after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        assert n == 48 << 21, n
        print(after - before)
        """
    )
    out = subprocess.run([sys.executable, "-c", script, str(tmp_path / "big")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    grown_kib = int(out.stdout)
    # All of them at once would be 96 MiB more.
    assert grown_kib < 32 << 10, f"the peak grew by {grown_kib} KiB"
