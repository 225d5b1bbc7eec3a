#!/usr/bin/env python3
"""Object store workloads from Python, bale against disk-objectstore and git,
one JSON line per run.

usage: objects_bench.py ENGINE WORKLOAD DATA WORK [N]

W4 (DATA/objs.bin: 100,000 objects of 0..1000 B, from gen_data.py):
  bale w4        ObjectStore.add_many(all) (durable on return, straight into
                 packs), one get_many() in a shuffled order, then one get()
                 per object in that order
  dos-pack w4    disk-objectstore: add_objects_to_pack(all) (defaults: fsync,
                 no compression), get_objects_content(shuffled), then
                 get_object_content() per object
  dos-loose w4   add_object() per object (the first N only), same reads
  git w4         git fast-import of every blob into one pack, then one
                 `git cat-file --batch` read (single reads would be one
                 process each: not measured)
Durable small writes (the first N objects of objs.bin, from 4 processes,
each writing its quarter):
  bale durable      batches of 1000 objects, each batch durable on commit
  bale durable-one  one durable add() per object
  dos-loose durable one add_object() per object (disk-objectstore syncs each)
W5 (DATA/big.bin):
  bale w5        add_file(big.bin) in a child process (peak RSS measured),
                 then a copy with 1 MiB changed in the middle, then a read
                 back through open() in 1 MiB reads
  cp w5          cp big.bin + sync;  git w5: git add big.bin
"""
import json
import os
import random
import resource
import shutil
import struct
import subprocess
import sys
import time


def load(datadir, limit=None):
    raw = open(os.path.join(datadir, "objs.bin"), "rb").read()
    (m,) = struct.unpack_from("<I", raw, 0)
    sizes = struct.unpack_from("<%dH" % m, raw, 4)
    off = 4 + 2 * m
    out = []
    for s in sizes:
        out.append(raw[off:off + s])
        off += s
    return out[:limit] if limit else out


def dir_size(p):
    app = alloc = files = 0
    for root, _, fs in os.walk(p):
        for f in fs:
            st = os.stat(os.path.join(root, f))
            app += st.st_size
            alloc += st.st_blocks * 512
            files += 1
    return app, alloc, files


def shuffled(xs):
    order = list(xs)
    random.Random(7).shuffle(order)
    return order


def w4_bale(objs, work, res):
    import bale
    path = os.path.join(work, "store")
    t = time.perf_counter()
    s = bale.ObjectStore(path, create=True)
    ids = s.add_many(objs)
    res["write_s"] = time.perf_counter() - t
    res["unique"] = len(set(ids))
    res["disk_bytes"], res["disk_alloc_bytes"], res["files"] = dir_size(path)
    order = shuffled(set(ids))
    t = time.perf_counter()
    got = dict(s.get_many(order))
    res["read_bulk_s"] = time.perf_counter() - t
    assert len(got) == len(order)
    t = time.perf_counter()
    n = 0
    for i in order:
        n += len(s.get(i))
    res["read_single_s"] = time.perf_counter() - t
    assert got[order[0]] == s.get(order[0])
    s.close()


def w4_dos(objs, work, res, loose):
    from disk_objectstore import Container
    c = Container(os.path.join(work, "c"))
    c.init_container(clear=True)
    t = time.perf_counter()
    if loose:
        hashes = [c.add_object(x) for x in objs]
    else:
        hashes = c.add_objects_to_pack(objs)
    res["write_s"] = time.perf_counter() - t
    res["unique"] = len(set(hashes))
    res["disk_bytes"], res["disk_alloc_bytes"], res["files"] = dir_size(os.path.join(work, "c"))
    order = shuffled(set(hashes))
    t = time.perf_counter()
    got = c.get_objects_content(order)
    res["read_bulk_s"] = time.perf_counter() - t
    assert len(got) == len(order)
    t = time.perf_counter()
    for h in order:
        c.get_object_content(h)
    res["read_single_s"] = time.perf_counter() - t
    c.close()


def w4_git(objs, work, res):
    repo = os.path.join(work, "repo.git")
    subprocess.run(["git", "init", "-q", "--bare", repo], check=True)
    marks = os.path.join(work, "marks")
    t = time.perf_counter()
    p = subprocess.Popen(["git", "-C", repo, "fast-import", "--quiet", "--export-marks=" + marks],
                         stdin=subprocess.PIPE)
    for i, x in enumerate(objs, 1):
        p.stdin.write(b"blob\nmark :%d\ndata %d\n" % (i, len(x)))
        p.stdin.write(x)
        p.stdin.write(b"\n")
    p.stdin.close()
    assert p.wait() == 0
    res["write_s"] = time.perf_counter() - t
    shas = [line.split()[1] for line in open(marks)]
    res["unique"] = len(set(shas))
    res["disk_bytes"], res["disk_alloc_bytes"], res["files"] = dir_size(os.path.join(repo, "objects"))
    order = shuffled(set(shas))
    t = time.perf_counter()
    out = subprocess.run(["git", "-C", repo, "cat-file", "--batch"], input="\n".join(order).encode() + b"\n",
                         stdout=subprocess.PIPE, check=True).stdout
    res["read_bulk_s"] = time.perf_counter() - t
    assert len(out) > sum(map(len, objs)) * len(order) // len(objs) // 2
    res["read_single_s"] = None


def durable_worker(engine, path, part, nparts, datadir, limit):
    """One of the writer processes: adds its share, prints the ids it got."""
    objs = load(datadir, limit)[part::nparts]
    if engine == "dos-loose":
        from disk_objectstore import Container
        c = Container(path)
        ids = [c.add_object(x) for x in objs]
        c.close()
    else:
        import bale
        s = bale.ObjectStore(path)
        ids = []
        if engine == "bale-one":
            ids = [s.add(x) for x in objs]
        else:
            for i in range(0, len(objs), 1000):
                with s.batch() as b:
                    ids.extend(b.add(x) for x in objs[i:i + 1000])
        s.close()
    print(json.dumps(ids))


def durable(engine, datadir, work, limit, res, nparts=4):
    path = os.path.join(work, "store")
    if engine == "dos-loose":
        from disk_objectstore import Container
        c = Container(path)
        c.init_container(clear=True)
        c.close()
    else:
        import bale
        bale.ObjectStore(path, create=True).close()
    kind = {"bale": "bale", "bale-one": "bale-one", "dos-loose": "dos-loose"}[engine]
    t = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, __file__, "_worker", kind, path, str(i), str(nparts), datadir,
                               str(limit)], stdout=subprocess.PIPE) for i in range(nparts)]
    outs = [p.communicate()[0] for p in procs]
    res["write_s"] = time.perf_counter() - t
    assert all(p.returncode == 0 for p in procs)
    ids = set()
    for o in outs:
        ids.update(json.loads(o))
    res["unique"] = len(ids)
    # Nothing lost: every acknowledged id reads back.
    if engine == "dos-loose":
        from disk_objectstore import Container
        c = Container(path)
        got = c.get_objects_content(list(ids))
        c.close()
    else:
        import bale
        s = bale.ObjectStore(path, readonly=True)
        got = dict(s.get_many(list(ids)))
        s.close()
    res["lost"] = len(ids) - len(got)
    res["processes"] = nparts


def w5_bale_child(path, big, work):
    import bale
    t = time.perf_counter()
    s = bale.ObjectStore(path, create=True)
    oid = s.add_file(big)
    add_s = time.perf_counter() - t
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    before = s.stats()
    copy = os.path.join(work, "v2.bin")
    shutil.copyfile(big, copy)
    size = os.path.getsize(big)
    with open(copy, "r+b") as f:
        f.seek(size // 2)
        f.write(random.Random(5).randbytes(1 << 20))
    t = time.perf_counter()
    s.add_file(copy)
    readd_s = time.perf_counter() - t
    after = s.stats()
    os.remove(copy)
    t = time.perf_counter()
    n = 0
    with s.open(oid) as r:
        while True:
            b = r.read(1 << 20)
            if not b:
                break
            n += len(b)
    read_s = time.perf_counter() - t
    assert n == size
    s.close()
    stat = lambda st, k: st[k] if isinstance(st, dict) else getattr(st, k)
    print(json.dumps({"add_s": add_s, "peak_rss_kb": peak_kb, "readd_s": readd_s,
                      "readd_new_bytes": stat(after, "stored_bytes") - stat(before, "stored_bytes"),
                      "read_s": read_s, "bytes": size}))


def main():
    if sys.argv[1] == "_worker":
        durable_worker(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6], int(sys.argv[7]))
        return
    if sys.argv[1] == "_w5":
        w5_bale_child(sys.argv[2], sys.argv[3], sys.argv[4])
        return
    engine, workload, datadir, work = sys.argv[1:5]
    # Absolute: git runs with -C inside the work directory.
    datadir, work = os.path.abspath(datadir), os.path.abspath(work)
    limit = int(sys.argv[5]) if len(sys.argv) > 5 else None
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    res = {"engine": engine, "workload": workload}
    if workload == "w4":
        objs = load(datadir, limit)
        res["objects"] = len(objs)
        res["bytes"] = sum(map(len, objs))
        if engine == "bale":
            w4_bale(objs, work, res)
        elif engine in ("dos-pack", "dos-loose"):
            w4_dos(objs, work, res, engine == "dos-loose")
        elif engine == "git":
            w4_git(objs, work, res)
        else:
            raise SystemExit("unknown engine " + engine)
    elif workload == "durable":
        res["objects"] = limit or len(load(datadir))
        durable(engine, datadir, work, limit or 100000, res)
    elif workload == "w5":
        big = os.path.join(datadir, "big.bin")
        res["bytes"] = os.path.getsize(big)
        if engine == "bale":
            out = subprocess.run([sys.executable, __file__, "_w5", os.path.join(work, "store"), big, work],
                                 stdout=subprocess.PIPE, check=True).stdout
            res.update(json.loads(out))
        elif engine == "cp":
            t = time.perf_counter()
            subprocess.run(["cp", big, os.path.join(work, "copy")], check=True)
            subprocess.run(["sync"], check=True)
            res["add_s"] = time.perf_counter() - t
        elif engine == "git":
            repo = os.path.join(work, "repo")
            subprocess.run(["git", "init", "-q", repo], check=True)
            os.link(big, os.path.join(repo, "big.bin"))
            t = time.perf_counter()
            subprocess.run(["git", "-C", repo, "add", "big.bin"], check=True)
            res["add_s"] = time.perf_counter() - t
        else:
            raise SystemExit("unknown engine " + engine)
    else:
        raise SystemExit("unknown workload " + workload)
    for k, v in list(res.items()):
        if isinstance(v, float):
            res[k] = round(v, 4)
    print(json.dumps(res), flush=True)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
