"""Threads, processes (spawn, forkserver, fork) and handles inherited across fork."""

import gc
import multiprocessing as mp
import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import bale
from fork_checks import refused_after_fork

KEYS = [b"k%02d" % i for i in range(8)]


def fill(path, gen=0):
    with bale.Tree.open(path, create=True) as t, t.write() as txn:
        for k in KEYS:
            txn[k] = b"%06d" % gen


def check_snapshot(snap):
    """Every key of a snapshot holds the same generation; returns it."""
    vals = {snap[k] for k in KEYS}
    assert len(vals) == 1, vals
    g = vals.pop()
    assert list(snap.items()) == [(k, g) for k in KEYS]
    return int(g)


# ---------------------------------------------------------------- processes


def writer_proc(path, rounds, q):
    try:
        with bale.Tree.open(path, wait=True) as t:  # wait for the other writer
            for _ in range(rounds):
                with t.write() as txn:
                    g = int(txn[KEYS[0]]) + 1
                    for k in KEYS:
                        txn[k] = b"%06d" % g
        q.put(("writer", "ok"))
    except BaseException as e:  # report, do not hang the parent
        q.put(("writer", repr(e)))


def reader_proc(path, final, q):
    try:
        seen, snaps = 0, 0
        with bale.Tree.open(path, readonly=True) as t:
            deadline = time.monotonic() + 60
            while seen < final and time.monotonic() < deadline:
                with t.read() as snap:
                    g = check_snapshot(snap)
                assert g >= seen, (g, seen)
                seen, snaps = g, snaps + 1
        q.put(("reader", "ok" if seen == final else f"saw only {seen}"))
    except BaseException as e:
        q.put(("reader", repr(e)))


@pytest.mark.parametrize("method", ["spawn", "forkserver", "fork"])
def test_writers_and_readers_in_processes(tmp_path, method):
    path = str(tmp_path / "mp.bale")
    fill(path)
    ctx = mp.get_context(method)
    q = ctx.Queue()
    rounds, writers, readers = 15, 2, 2
    with bale.Tree.open(path) as mine:  # the parent keeps its own handle open across the fork
        procs = [ctx.Process(target=writer_proc, args=(path, rounds, q)) for _ in range(writers)]
        procs += [ctx.Process(target=reader_proc, args=(path, rounds * writers, q)) for _ in range(readers)]
        for p in procs:
            p.start()
        results = [q.get(timeout=120) for _ in procs]
        for p in procs:
            p.join(timeout=30)
            assert p.exitcode == 0
        assert sorted(results) == [("reader", "ok")] * readers + [("writer", "ok")] * writers
        with mine.read() as snap:
            assert check_snapshot(snap) == rounds * writers
        assert mine.check().ok


# ---------------------------------------------------------------- fork


def test_handles_inherited_across_fork_refuse_to_work(tmp_path):
    path = tmp_path / "fork.bale"
    fill(path, 1)
    t = bale.Tree.open(path)
    snap = t.read()
    it = iter(snap.keys())
    cur = snap.cursor()
    view = snap.get(KEYS[0], buffer=True)
    f = t.open_value(KEYS[0])
    txn = t.write()
    txn[b"new"] = b"pending"
    pid = os.fork()
    if pid == 0:  # the child: report through the exit code only
        code = 0
        try:
            ops = [lambda: t[KEYS[0]], lambda: len(t), lambda: t.read(), lambda: t.write(), lambda: snap[KEYS[0]],
                   lambda: next(it), lambda: f.read(), lambda: txn[b"x"], lambda: txn.commit(), lambda: list(t.items()),
                   lambda: cur.next(), lambda: bytes(view), lambda: memoryview(view), lambda: txn.cursor()]
            code = refused_after_fork(ops)
            # Dropping the inherited objects must not release the parent's locks.
            del t, snap, it, cur, view, f, txn
            gc.collect()
            if code == 0:
                with bale.Tree.open(path) as own:  # a handle of its own works
                    if own[KEYS[0]] != b"000001":
                        code = 60
                    try:
                        own[b"c"] = b"3"
                        code = 61  # the parent's transaction still holds the writer lock
                    except bale.LockedError:
                        pass
        except BaseException:
            code = 70
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, os.WEXITSTATUS(status)
    with bale.Tree.open(path) as other:
        with pytest.raises(bale.LockedError):
            other[b"x"] = b"y"  # the child did not release the parent's writer lock
        assert snap[KEYS[0]] == b"000001" and next(it) == KEYS[0] and f.read() == b"000001"
        txn.commit()
        assert t[b"new"] == b"pending"
        other[b"x"] = b"y"
    t.close()


# ---------------------------------------------------------------- threads


def test_threads_read_while_another_writes(tmp_path):
    path = tmp_path / "threads.bale"
    fill(path)
    errors = []
    stop = threading.Event()
    with bale.Tree.open(path) as t:

        def reader(shared):
            try:
                while not stop.is_set():
                    with t.read() as snap:
                        g = check_snapshot(snap)
                        assert check_snapshot(shared) == 0 and g >= 0
                        for _ in range(50):
                            assert snap.get(KEYS[3]) == b"%06d" % g
            except BaseException as e:
                errors.append(e)

        with t.read() as shared:
            threads = [threading.Thread(target=reader, args=(shared,)) for _ in range(4)]
            for th in threads:
                th.start()
            for g in range(1, 30):
                with t.write() as txn:
                    for k in KEYS:
                        txn[k] = b"%06d" % g
            stop.set()
            for th in threads:
                th.join(timeout=60)
        assert not errors, errors
        assert t[KEYS[0]] == b"%06d" % 29


def test_threads_share_one_snapshot_and_iterate(tmp_path):
    path = tmp_path / "scan.bale"
    with bale.Tree.open(path, create=True) as t:
        t.update({b"%05d" % i: b"v%d" % i for i in range(5000)})
        t[b"big"] = os.urandom(1 << 20)
        big = t[b"big"]
        errors = []
        with t.read() as snap:

            def work():
                try:
                    for _ in range(3):
                        assert sum(1 for _ in snap.items()) == 5001
                        assert snap[b"big"] == big
                        with snap.open_value(b"big") as f:
                            f.seek(12345)
                            assert f.read(1000) == big[12345:13345]
                except BaseException as e:
                    errors.append(e)

            threads = [threading.Thread(target=work) for _ in range(4)]
            for th in threads:
                th.start()
            for th in threads:
                th.join(timeout=60)
        assert not errors, errors


def test_waiting_writer_releases_the_gil():
    # In a subprocess with a timeout: if write() kept the GIL while it waits
    # for the writer lock, the thread holding the lock could never commit.
    code = textwrap.dedent(
        """
        import sys, tempfile, threading, time, os
        import bale
        path = os.path.join(tempfile.mkdtemp(), "w.bale")
        t = bale.Tree.open(path, create=True, wait=True)
        txn = t.write()
        done = []
        def second():
            with t.write() as w:          # blocks until the main thread commits
                w[b"second"] = b"2"
            done.append(True)
        th = threading.Thread(target=second)
        th.start()
        time.sleep(0.3)
        txn[b"first"] = b"1"
        txn.commit()
        th.join(20)
        assert done and t[b"second"] == b"2" and t[b"first"] == b"1"
        print("ok")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_transaction_shared_by_threads(tmp_path):
    with bale.Tree.open(tmp_path / "shared.bale", create=True) as t:
        errors = []
        with t.write() as txn:

            def put(n):
                try:
                    for i in range(500):
                        txn[b"%d-%04d" % (n, i)] = os.urandom(5000 if i % 50 == 0 else 10)
                except BaseException as e:
                    errors.append(e)

            threads = [threading.Thread(target=put, args=(n,)) for n in range(4)]
            for th in threads:
                th.start()
            for th in threads:
                th.join(timeout=60)
        assert not errors and len(t) == 2000
