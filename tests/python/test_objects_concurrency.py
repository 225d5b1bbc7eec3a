"""The object store across threads (GIL released, close racing calls,
buffers changed by other threads) and processes (spawn, forkserver, fork,
and handles inherited across fork)."""

import gc
import hashlib
import io
import multiprocessing as mp
import os
import random
import subprocess
import sys
import textwrap
import threading

import pytest

import bale
from fork_checks import refused_after_fork

SMALL = dict(chunk_min=1024, chunk_avg=4096, chunk_max=16384, fanout=16)


def content(tag, n):
    """Deterministic content: the same tag and size give the same bytes in every process."""
    return random.Random(f"{tag}/{n}").randbytes(n)


def run_threads(targets):
    errors = []

    def guarded(f):
        def run():
            try:
                f()
            except BaseException as e:  # collected, then asserted in the test
                errors.append(e)

        return run

    threads = [threading.Thread(target=guarded(f)) for f in targets]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=120)
    assert not any(th.is_alive() for th in threads)
    return errors


# ---------------------------------------------------------------- threads


@pytest.mark.parametrize("single", [False, True], ids=["dir", "file"])
def test_threads_add_and_read_at_once(tmp_path, single):
    path = tmp_path / ("o.bale" if single else "o")
    with bale.ObjectStore(path, create=True, single_file=single, **SMALL) as s:
        published = {}
        lock = threading.Lock()
        done = threading.Event()

        def writer(w):
            for i in range(40):
                data = content(f"w{w}", 10 + i * 997 if i % 10 else 150_000 + i)  # some chunked
                if i % 3 == 0:
                    oid = s.add_file(io.BytesIO(data))
                elif i % 3 == 1:
                    oid = s.add(bytearray(data))
                else:
                    with s.batch() as b:
                        oid = b.add(data)
                assert oid == s.meta(oid).id
                with lock:
                    published[oid] = data

        def reader():
            while not done.is_set():
                with lock:
                    items = list(published.items())
                for oid, data in items[-20:]:
                    assert s.get(oid) == data
                    with s.open(oid) as f:
                        f.seek(len(data) // 2)
                        assert f.read() == data[len(data) // 2:]
                    assert s.get_range(oid, 3, 50) == data[3:53]
                if items:
                    got = dict(s.get_many([oid for oid, _ in items[:20]]))
                    assert got == dict(items[:20])

        def packer():
            while not done.is_set():
                s.pack()

        writers = [lambda w=w: writer(w) for w in range(4)]
        readers = [reader, reader] + ([] if single else [packer])

        def writers_then_stop():
            try:
                assert not run_threads(writers)
            finally:
                done.set()

        errors = run_threads([writers_then_stop, *readers])
        assert not errors, errors
        assert len(s) == len(published) == 160
        assert all(s.has_many(list(published))) and s.validate().ok


def test_adds_release_the_gil_while_they_wait():
    # In a subprocess with a timeout: a single-file store's batch holds the
    # writer lock, so the other thread's add waits inside the core; if it
    # kept the GIL, the main thread could never end the batch.
    code = textwrap.dedent(
        """
        import os, tempfile, threading, time
        import bale
        s = bale.ObjectStore(os.path.join(tempfile.mkdtemp(), "o.bale"), create=True, single_file=True)
        b = s.batch()
        first = b.add(b"first")
        started, got = threading.Event(), []
        def second():
            started.set()
            got.append(s.add(b"second"))   # waits for the batch to end
        th = threading.Thread(target=second)
        th.start()
        started.wait()
        time.sleep(0.3)
        b.commit()
        th.join(20)
        assert got and s.has(got[0]) and s.has(first)
        print("ok")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_close_discards_open_batches():
    # In a subprocess with a timeout: a single-file store's batch holds the
    # writer lock; if close() left it open, the next handle's add (and a
    # close waiting for a thread blocked behind the batch) would wait forever.
    code = textwrap.dedent(
        """
        import os, tempfile, threading, time
        import bale
        path = os.path.join(tempfile.mkdtemp(), "o.bale")
        s = bale.ObjectStore(path, create=True, single_file=True)
        b = s.batch()
        dropped = b.add(b"never committed")
        started, got = threading.Event(), []
        def blocked():
            started.set()
            got.append(s.add(b"waits for the batch"))
        th = threading.Thread(target=blocked)
        th.start()
        started.wait()
        time.sleep(0.3)
        s.close()                      # discards the batch, then waits for the add
        th.join(20)
        assert b.closed and got
        with bale.ObjectStore(path) as again:
            assert again.has(got[0]) and not again.has(dropped)
            again.add(b"the writer lock is free")
        print("ok")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_close_while_other_threads_read(tmp_path):
    s = bale.ObjectStore(tmp_path / "o", create=True, **SMALL)
    objects = {s.add(content("c", n)): content("c", n) for n in (5, 5000, 80_000, 300_000)}
    files = [s.open(oid) for oid in objects]
    running = threading.Barrier(5)
    closed_seen = []

    def reader():
        running.wait()
        try:
            while True:
                for oid, data in objects.items():
                    assert s.get(oid) == data and s.has(oid) and s.meta(oid).size == len(data)
                    with s.open(oid) as f:
                        assert f.read() == data
                    assert s.get_range(oid, 1, 10) == data[1:11]
                    assert len(s) == len(objects)
        except bale.ClosedError as e:
            closed_seen.append(e.code)

    def closer():
        running.wait()
        s.close()

    errors = run_threads([reader, reader, reader, reader, closer])
    assert not errors, errors
    assert closed_seen == ["CLOSED"] * 4 and s.closed
    # Files opened before close need no lock and keep working.
    assert [f.read() for f in files] == list(objects.values())
    with bale.ObjectStore(tmp_path / "o") as again:
        assert again.validate().ok


class Gate(io.RawIOBase):
    """A binary file whose first read waits until `release` is set."""

    def __init__(self, data, on_read=None):
        self.data = io.BytesIO(data)
        self.reading = threading.Event()
        self.release = threading.Event()
        self.on_read = on_read

    def readable(self):
        return True

    def read(self, n=-1):
        self.reading.set()
        if self.on_read is not None:
            self.on_read()
        assert self.release.wait(60)
        return self.data.read(n)


def test_close_waits_for_a_running_add(tmp_path):
    path = tmp_path / "o"
    s = bale.ObjectStore(path, create=True, hash="sha256", **SMALL)
    data = content("gate", 200_000)
    oid = hashlib.sha256(data).hexdigest()
    src = Gate(data)
    seen_after_close = []

    def add():
        assert s.add_file(src) == oid  # began before close: it finishes

    def close():
        src.reading.wait()
        threading.Timer(0.2, src.release.set).start()
        s.close()
        # close() returned: the add it waited for is durable, and the
        # handle's lock is released (delete needs the store to itself).
        with bale.ObjectStore(path) as again:
            seen_after_close.append(again.get(oid) == data)
            seen_after_close.append(again.delete([oid]) == 1)

    errors = run_threads([add, close])
    assert not errors, errors
    assert seen_after_close == [True, True]


def test_close_from_inside_a_call_of_the_same_handle(tmp_path):
    path = tmp_path / "o"
    s = bale.ObjectStore(path, create=True)
    src = Gate(b"closed while being read", on_read=s.close)
    src.release.set()
    oid = s.add_file(src)  # close() inside read(): no deadlock, the add completes
    assert s.closed
    with pytest.raises(bale.ClosedError):
        s.get(oid)
    with bale.ObjectStore(path) as again:
        assert again.get(oid) == b"closed while being read"
        assert again.delete([oid]) == 1  # the last call closed the handle, releasing its lock


def test_a_batch_shared_by_threads(tmp_path):
    with bale.ObjectStore(tmp_path / "o", create=True, **SMALL) as s:
        ids = {}
        lock = threading.Lock()
        with s.batch() as b:

            def add(t):
                for i in range(50):
                    data = content(f"b{t}", 100 + i * 3000)
                    oid = b.add_file(io.BytesIO(data)) if i % 2 else b.add(data)
                    with lock:
                        ids[oid] = data

            assert not run_threads([lambda t=t: add(t) for t in range(4)])
        assert len(s) == len(ids) == 200
        assert dict(s.get_many(list(ids))) == ids


def test_buffers_changed_by_other_threads_during_calls(tmp_path):
    # R13: a bytearray cannot be resized while a call uses it (BufferError in
    # the other thread), and an id always names the bytes stored, even when
    # another thread writes into the buffer during the add (objects stored
    # whole, up to chunk_max, and chunked ones).
    with bale.ObjectStore(tmp_path / "o", create=True, compression="never", **SMALL) as s:
        small = bytearray(content("r13", SMALL["chunk_max"]))
        large = bytearray(content("r13", 1 << 20))
        stop = threading.Event()

        def meddle():
            rnd = random.Random(1)
            while not stop.is_set():
                for buf in (small, large):
                    i = rnd.randrange(len(buf))
                    buf[i] = (buf[i] + 1) % 256  # in place: allowed while exported
                    try:
                        buf.extend(b"x")  # a resize: refused while a call holds the buffer
                        del buf[-1]
                    except BufferError:
                        pass

        th = threading.Thread(target=meddle)
        th.start()
        try:
            ids = [s.add(buf) for buf in (small, large, memoryview(small), small)]
            ids += s.add_many([small, memoryview(large)] * 5)
            with s.batch() as b:
                ids += [b.add(small) for _ in range(200)] + [b.add(large)]
            out = bytearray(100_000)
            with s.open(ids[1]) as f:
                while f.readinto(out):
                    pass
        finally:
            stop.set()
            th.join(60)
        for oid in ids:
            s.get(oid, verify=True)  # raises if the content does not hash to its id
        assert s.validate().ok


# ---------------------------------------------------------------- processes


def child_adds(path, n, q):
    try:
        with bale.ObjectStore(path, **SMALL) as s:
            ids = []
            for i in range(20):
                data = content("shared" if i % 4 == 0 else f"child{n}", 100 + i * 5000)
                ids.append(s.add(data) if i % 2 else s.add_file(io.BytesIO(data)))
            ids += s.add_many([content(f"many{n}", i) for i in range(10)])
        q.put((n, ids))
    except BaseException as e:  # report, do not hang the parent
        q.put((n, repr(e)))


@pytest.mark.parametrize("method", ["spawn", "forkserver", "fork"])
def test_children_add_with_their_own_handles(tmp_path, method):
    path = str(tmp_path / "o")
    ctx = mp.get_context(method)
    q = ctx.Queue()
    with bale.ObjectStore(path, create=True, **SMALL) as mine:  # open in the parent across the fork
        before = mine.add(content("parent", 50_000))
        procs = [ctx.Process(target=child_adds, args=(path, n, q)) for n in range(3)]
        for p in procs:
            p.start()
        results = dict(q.get(timeout=120) for _ in procs)
        for p in procs:
            p.join(timeout=30)
            assert p.exitcode == 0
        assert all(isinstance(r, list) for r in results.values()), results
        for n, ids in results.items():
            assert len(ids) == 30 and all(mine.has_many(ids))
            assert mine.get(ids[1], verify=True) == content(f"child{n}", 5100)
        assert results[0][0] == results[1][0] == results[2][0]  # the shared content, stored once
        assert mine.get(before) == content("parent", 50_000)
        assert mine.pack().problems == [] and mine.validate().ok


def test_handles_inherited_across_fork_refuse_to_work(tmp_path):
    path = tmp_path / "o"
    s = bale.ObjectStore(path, create=True, **SMALL)
    oid = s.add(content("fork", 100_000))
    b = s.batch()
    pending = b.add(b"pending in the parent's batch")
    f = s.open(oid)
    pid = os.fork()
    if pid == 0:  # the child: report through the exit code only
        code = 0
        try:
            ops = [lambda: s.get(oid), lambda: s.add(b"x"), lambda: len(s), lambda: s.batch(), s.pack,
                   lambda: s.open(oid), lambda: b.add(b"x"), b.commit, lambda: f.read(10), s.stats]
            code = refused_after_fork(ops)
            s.close()  # does nothing in the child
            # Dropping the inherited objects must not release the parent's locks.
            del s, b, f
            gc.collect()
            if code == 0:
                with bale.ObjectStore(path) as own:  # a handle of its own works
                    if own.get(oid) != content("fork", 100_000) or not own.has(own.add(b"child")):
                        code = 60
                    try:
                        own.delete([oid])
                        code = 61  # the parent's handle still holds the store open
                    except bale.LockedError:
                        pass
        except BaseException:
            code = 70
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, os.WEXITSTATUS(status)
    with bale.ObjectStore(path) as other:
        with pytest.raises(bale.LockedError):
            other.delete([oid])  # the child did not release the parent's shared lock
        assert f.read(10) == content("fork", 100_000)[:10]
        b.commit()
        assert other.has(pending) and other.has(oid)
    s.close()
    f.close()
    with bale.ObjectStore(path) as last:
        assert last.delete([oid]) == 1 and last.validate().ok


def child_holds_open(path, ready, release):
    with bale.ObjectStore(path):
        ready.set()
        release.wait(60)


@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_maintenance_is_locked_while_another_process_has_the_store_open(tmp_path, method):
    path = str(tmp_path / "o")
    with bale.ObjectStore(path, create=True) as s:
        oid = s.add(b"x")
        ctx = mp.get_context(method)
        ready, release = ctx.Event(), ctx.Event()
        p = ctx.Process(target=child_holds_open, args=(path, ready, release))
        p.start()
        try:
            assert ready.wait(60)
            for op in (lambda: s.delete([oid]), s.repack, s.rebuild_index):
                with pytest.raises(bale.LockedError):
                    op()
            assert s.pack().problems == []  # packing runs beside other processes
        finally:
            release.set()
            p.join(60)
        assert p.exitcode == 0
        assert s.delete([oid]) == 1
