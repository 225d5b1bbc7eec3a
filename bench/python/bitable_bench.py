#!/usr/bin/env python3
"""Bitables from Python against py-lmdb: build N sorted pairs (24-byte keys,
8-byte values, the Bitable paper's shape), then LOOKUPS random point
lookups in one thread, each value touched; one JSON line per engine run.

    bitable_bench.py ENGINE WORK [--pairs N] [--lookups M]

ENGINE is `bale` (BitableWriter.append, finish(durable=False) and
Bitable.get) or `lmdb` (one write transaction of put(..., append=True),
its default sync at commit, then txn.get in one read transaction).
Keys come from a seeded generator before any clock starts.
"""
import argparse
import json
import os
import random
import resource
import shutil
import sys
import time


def data(n, lookups):
    rng = random.Random(20241124)
    step = (1 << 64) // n
    keys = [(i * step).to_bytes(8, "big") + rng.randbytes(16) for i in range(n)]
    values = [i.to_bytes(8, "little") for i in range(n)]
    order = [keys[rng.randrange(n)] for _ in range(lookups)]
    return keys, values, order


def run_bale(work, keys, values, order):
    import bale

    path = os.path.join(work, "t.bitable")
    t0 = time.perf_counter()
    w = bale.BitableWriter(path)
    append = w.append
    for k, v in zip(keys, values):
        append(k, v)
    w.finish(durable=False)
    build = time.perf_counter() - t0
    t = bale.Bitable.open(path)
    get = t.get
    for k in order[: len(order) // 4]:  # warm the map
        get(k)
    cs = 0
    t0 = time.perf_counter()
    for k in order:
        cs += get(k)[0]
    lookup = time.perf_counter() - t0
    return build, lookup, cs, os.path.getsize(path)


def run_lmdb(work, keys, values, order):
    import lmdb

    path = os.path.join(work, "lmdb")
    t0 = time.perf_counter()
    env = lmdb.open(path, map_size=max(1 << 30, len(keys) * 100))
    with env.begin(write=True) as txn:
        put = txn.put
        for k, v in zip(keys, values):
            put(k, v, append=True)
    build = time.perf_counter() - t0
    size = os.path.getsize(os.path.join(path, "data.mdb"))
    with env.begin() as txn:
        get = txn.get
        for k in order[: len(order) // 4]:
            get(k)
        cs = 0
        t0 = time.perf_counter()
        for k in order:
            cs += get(k)[0]
        lookup = time.perf_counter() - t0
    env.close()
    return build, lookup, cs, size


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("engine", choices=["bale", "lmdb"])
    ap.add_argument("work")
    ap.add_argument("--pairs", type=int, default=2_000_000)
    ap.add_argument("--lookups", type=int, default=2_000_000)
    a = ap.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    keys, values, order = data(a.pairs, a.lookups)
    run = run_bale if a.engine == "bale" else run_lmdb
    build, lookup, cs, size = run(a.work, keys, values, order)
    shutil.rmtree(a.work, ignore_errors=True)
    print(json.dumps({
        "engine": f"python-{a.engine}",
        "workload": "bt-python",
        "pairs": a.pairs,
        "build_s": round(build, 4),
        "pairs_per_s": round(a.pairs / build),
        "lookups": a.lookups,
        "lookup_s": round(lookup, 4),
        "lookups_per_s": round(a.lookups / lookup),
        "file_bytes": size,
        "peak_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        "checksum": cs,
    }))


if __name__ == "__main__":
    sys.exit(main())
