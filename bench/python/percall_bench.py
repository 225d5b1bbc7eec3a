#!/usr/bin/env python3
"""Per-call reads from Python: a fresh snapshot (read transaction) for every
get, bale against py-lmdb, on the small and the large per-call stores that
`bale-bench percall-build` makes (bench/percall.sh builds them).

usage:
  percall_bench.py [--runs N] [--passes P] [--peers a,b,...] [--stores small,large]
                   [--data DIR] [--work DIR] [--out FILE.jsonl]
      runs every peer on every store N times (one fresh process per run,
      peers interleaved and rotated each round) and prints a markdown table.
  percall_bench.py --one PEER DATADIR STOREDIR PASSES
      one run: prints one JSON line.

PEER (each get opens and ends its own snapshot / read transaction):
  bale          t[key]                        (bale.Tree.__getitem__)
  bale-get      t.get(key)
  lmdb-with     with env.begin() as txn: v = txn.get(key)
  lmdb          v = env.begin().get(key)      (the txn ends when dropped)
  lmdb-buffers  with env.begin(buffers=True) as txn: v = txn.get(key)
                (a zero-copy memoryview, touched inside the transaction)

Keys are the N records of DATADIR/kv.bin, read in DATADIR/order.bin order,
materialised as bytes before the clock starts. One warm-up pass over all
keys, then PASSES timed passes; every value is touched (v[0] + len(v)).
"""
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from kv_bench import load as kv_load  # noqa: E402
PEERS = ["bale", "bale-get", "lmdb-with", "lmdb", "lmdb-buffers"]


def load(datadir):
    """The keys in read order (kv_bench's loader, which the write benchmarks share)."""
    return kv_load(datadir)[2]


def pass_fn(peer, store):
    if peer.startswith("bale"):
        import bale
        t = bale.Tree.open(os.path.join(store, "kv.bale"), readonly=True)
        if peer == "bale":
            def run(keys):
                cs = 0
                for k in keys:
                    v = t[k]
                    cs += v[0] + len(v)
                return cs
        else:
            get = t.get

            def run(keys):
                cs = 0
                for k in keys:
                    v = get(k)
                    cs += v[0] + len(v)
                return cs
        return run
    import lmdb
    env = lmdb.open(os.path.join(store, "lmdb"), readonly=True, lock=True, max_readers=126)
    begin = env.begin
    if peer == "lmdb-with":
        def run(keys):
            cs = 0
            for k in keys:
                with begin() as txn:
                    v = txn.get(k)
                cs += v[0] + len(v)
            return cs
    elif peer == "lmdb":
        def run(keys):
            cs = 0
            for k in keys:
                v = begin().get(k)
                cs += v[0] + len(v)
            return cs
    elif peer == "lmdb-buffers":
        def run(keys):
            cs = 0
            for k in keys:
                with begin(buffers=True) as txn:
                    v = txn.get(k)
                    cs += v[0] + len(v)
            return cs
    else:
        raise SystemExit("unknown peer " + peer)
    return run


def one(peer, datadir, store, passes):
    keys = load(datadir)
    run = pass_fn(peer, store)
    want = run(keys)  # warm-up
    times = []
    for _ in range(passes):
        t = time.perf_counter()
        cs = run(keys)
        times.append(time.perf_counter() - t)
        assert cs == want, (cs, want)
    return {"bench": "percall", "host": "python", "engine": peer, "store": os.path.basename(store.rstrip("/")),
            "n": len(keys), "passes_s": [round(x, 6) for x in times],
            "best_ops_per_s": round(len(keys) / min(times)), "checksum": want}


def table(rows):
    """ops/s best (median) per peer and store, bale's ratios."""
    from statistics import median
    cell = {}
    for r in rows:
        cell.setdefault((r["engine"], r["store"]), []).extend(r["n"] / t for t in r["passes_s"])
    peers = sorted({p for p, _ in cell}, key=lambda p: PEERS.index(p) if p in PEERS else 99)
    stores = [s for s in ("small", "large") if any(k[1] == s for k in cell)]
    out = ["| python peer | " + " | ".join(f"{s} ops/s best (median)" for s in stores) + " | large / small |",
           "| --- |" + " --- |" * (len(stores) + 1)]
    for p in peers:
        cs = [cell.get((p, s)) for s in stores]
        txt = [f"{max(c):,.0f} ({median(c):,.0f})" if c else "-" for c in cs]
        ls = f"{max(cell[(p, 'large')]) / max(cell[(p, 'small')]):.2f}×" \
            if (p, "large") in cell and (p, "small") in cell else "-"
        out.append(f"| {p} | " + " | ".join(txt) + f" | {ls} |")
    return "\n".join(out)


def main():
    args = sys.argv[1:]
    if args[:1] == ["--one"]:
        print(json.dumps(one(args[1], args[2], args[3], int(args[4]))))
        return
    opts = {"--runs": "3", "--passes": "3", "--peers": ",".join(PEERS), "--stores": "small,large",
            "--data": os.path.join(HERE, "..", "data", "percall-200k"),
            "--work": os.path.join(HERE, "..", "work", "percall"), "--out": ""}
    while args:
        k = args.pop(0)
        if k not in opts or not args:
            raise SystemExit(__doc__)
        opts[k] = args.pop(0)
    peers = opts["--peers"].split(",")
    for s in opts["--stores"].split(","):
        if not os.path.exists(os.path.join(opts["--work"], s, "kv.bale")):
            raise SystemExit(f"no per-call stores in {opts['--work']}: run bench/percall.sh stores first")
    rows = []
    for rnd in range(int(opts["--runs"])):
        order = peers[rnd % len(peers):] + peers[:rnd % len(peers)]
        for s in opts["--stores"].split(","):
            for p in order:
                out = subprocess.run([sys.executable, __file__, "--one", p, opts["--data"],
                                      os.path.join(opts["--work"], s), opts["--passes"]],
                                     check=True, capture_output=True, text=True).stdout
                row = json.loads(out)
                rows.append(row)
                print(json.dumps(row), file=sys.stderr)
                if opts["--out"]:
                    with open(opts["--out"], "a") as f:
                        f.write(out)
    print(table(rows))


if __name__ == "__main__":
    main()
