#!/usr/bin/env python3
"""W1 (bulk load), W2 (1M random gets), W3 (full ordered scan) from Python:
bale against py-lmdb and the stdlib sqlite3, in one run.

usage:
  kv_bench.py [--runs N] [--peers a,b,...] [--data DIR] [--work DIR] [--out FILE.jsonl]
      runs every peer N times (one fresh process per run, peers interleaved
      and rotated each round) and prints a markdown table with min / median
      and bale's ratio to each peer.
  kv_bench.py --one PEER DATADIR WORKDIR
      one run of one peer; prints one JSON line.

PEER: bale | bale-update | lmdb | lmdb-putmulti | sqlite3
The data contract is the peers' one (bench/gen_data.py, kv.bin + order.bin):
keys and values are materialised as bytes before the clock starts; W1 times
open/create -> every put in one write transaction in kv.bin order -> durable
commit -> close; W2 reopens and times the gets in order.bin order in one read
transaction; W3 times a full ordered scan in the same read transaction. The
checksum (sum of value[0] + len(value) over W2 and W3) is 455102678 for the
default 1M set for every engine. lmdb is optional (pip install lmdb).
"""
import array
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

KL, VL = 16, 100
RL = KL + VL
HERE = os.path.dirname(os.path.abspath(__file__))
PEERS = ["bale", "bale-update", "lmdb", "lmdb-putmulti", "sqlite3"]


def load(datadir):
    with open(os.path.join(datadir, "kv.bin"), "rb") as f:
        buf = f.read()
    n = len(buf) // RL
    keys = [buf[i * RL:i * RL + KL] for i in range(n)]
    vals = [buf[i * RL + KL:(i + 1) * RL] for i in range(n)]
    order = array.array("I")
    with open(os.path.join(datadir, "order.bin"), "rb") as f:
        order.frombytes(f.read())
    rkeys = [keys[i] for i in order]
    return keys, vals, rkeys


def dir_size(p):
    app = alloc = 0
    for root, _, files in os.walk(p):
        for f in files:
            st = os.stat(os.path.join(root, f))
            app += st.st_size
            alloc += st.st_blocks * 512
    return app, alloc


def run_bale(keys, vals, rkeys, work, update):
    import bale
    path = os.path.join(work, "kv.bale")
    t = time.perf_counter()
    tree = bale.Tree.open(path, create=True)  # durable=True: fsync on commit
    with tree.write() as txn:
        if update:
            txn.update(zip(keys, vals))
        else:
            put = txn.put
            for k, v in zip(keys, vals):
                put(k, v)
    tree.close()
    w1 = time.perf_counter() - t
    tree = bale.Tree.open(path, readonly=True)
    cs = 0
    with tree.read() as snap:
        get = snap.get
        t = time.perf_counter()
        for k in rkeys:
            v = get(k)
            cs += v[0] + len(v)
        w2 = time.perf_counter() - t
        t = time.perf_counter()
        cnt = 0
        for k, v in snap.items():
            cnt += 1
            cs += v[0] + len(v)
        w3 = time.perf_counter() - t
    tree.close()
    return w1, w2, w3, cnt, cs


def run_lmdb(keys, vals, rkeys, work, putmulti):
    import lmdb
    path = os.path.join(work, "lmdb")
    t = time.perf_counter()
    env = lmdb.open(path, map_size=4 << 30)  # default sync=True: fsync on commit
    with env.begin(write=True) as txn:
        if putmulti:
            txn.cursor().putmulti(zip(keys, vals))
        else:
            put = txn.put
            for k, v in zip(keys, vals):
                put(k, v)
    env.close()
    w1 = time.perf_counter() - t
    env = lmdb.open(path, map_size=4 << 30, readonly=True)
    cs = 0
    with env.begin() as txn:
        get = txn.get
        t = time.perf_counter()
        for k in rkeys:
            v = get(k)
            cs += v[0] + len(v)
        w2 = time.perf_counter() - t
        t = time.perf_counter()
        cnt = 0
        for k, v in txn.cursor():
            cnt += 1
            cs += v[0] + len(v)
        w3 = time.perf_counter() - t
    env.close()
    return w1, w2, w3, cnt, cs


def run_sqlite(keys, vals, rkeys, work):
    import sqlite3
    path = os.path.join(work, "sqlite.db")
    t = time.perf_counter()
    con = sqlite3.connect(path, isolation_level=None)  # library defaults: rollback journal, synchronous=FULL
    con.execute("CREATE TABLE kv (k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID")
    con.execute("BEGIN")
    con.executemany("INSERT INTO kv (k, v) VALUES (?, ?)", zip(keys, vals))
    con.execute("COMMIT")
    con.close()
    w1 = time.perf_counter() - t
    con = sqlite3.connect(path, isolation_level=None)
    cur = con.cursor()
    q = "SELECT v FROM kv WHERE k = ?"
    cs = 0
    con.execute("BEGIN")  # all reads in one read transaction, as for the other peers
    t = time.perf_counter()
    for k in rkeys:
        v = cur.execute(q, (k,)).fetchone()[0]
        cs += v[0] + len(v)
    w2 = time.perf_counter() - t
    t = time.perf_counter()
    cnt = 0
    for k, v in con.execute("SELECT k, v FROM kv ORDER BY k"):
        cnt += 1
        cs += v[0] + len(v)
    w3 = time.perf_counter() - t
    con.execute("COMMIT")
    con.close()
    return w1, w2, w3, cnt, cs


def one(peer, datadir, work):
    keys, vals, rkeys = load(datadir)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    if peer in ("bale", "bale-update"):
        r = run_bale(keys, vals, rkeys, work, peer == "bale-update")
    elif peer in ("lmdb", "lmdb-putmulti"):
        r = run_lmdb(keys, vals, rkeys, work, peer == "lmdb-putmulti")
    elif peer == "sqlite3":
        r = run_sqlite(keys, vals, rkeys, work)
    else:
        raise SystemExit("unknown peer " + peer)
    w1, w2, w3, cnt, cs = r
    assert cnt == len(keys), (cnt, len(keys))
    app, alloc = dir_size(work)
    shutil.rmtree(work, ignore_errors=True)
    return {"peer": "py-" + peer, "n": len(keys), "w1_s": round(w1, 4), "w2_s": round(w2, 4),
            "w3_s": round(w3, 4), "file_bytes": app, "file_alloc_bytes": alloc, "checksum": cs}


def table(rows, peers):
    by = {p: [r for r in rows if r["peer"] == "py-" + p] for p in peers}
    by = {p: rs for p, rs in by.items() if rs}
    out = ["| engine | runs | W1 load s | W2 gets s | W3 scan s | file MB | checksum |",
           "| --- | --- | --- | --- | --- | --- | --- |"]
    stats = {}
    for p, rs in by.items():
        s = {w: (min(r[w] for r in rs), statistics.median(r[w] for r in rs)) for w in ("w1_s", "w2_s", "w3_s")}
        stats[p] = s
        cs = sorted({r["checksum"] for r in rs})
        out.append(f"| py-{p} | {len(rs)} | " + " | ".join(f"{s[w][0]:.3f} / {s[w][1]:.3f}" for w in s)
                   + f" | {rs[0]['file_bytes'] / 1e6:.1f} | {', '.join(map(str, cs))} |")
    out += ["", "bale's time divided by the peer's (below 1: bale is faster), min over min (median over median):", "",
            "| ratio | W1 load | W2 gets | W3 scan |", "| --- | --- | --- | --- |"]
    for b in ("bale", "bale-update"):
        for p in stats:
            if b not in stats or p.startswith("bale"):
                continue
            cells = []
            for w in ("w1_s", "w2_s", "w3_s"):
                mn = stats[b][w][0] / stats[p][w][0]
                md = stats[b][w][1] / stats[p][w][1]
                cells.append(f"{mn:.2f}× ({md:.2f}×)")
            out.append(f"| py-{b} / py-{p} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main():
    args = sys.argv[1:]
    if args[:1] == ["--one"]:
        print(json.dumps(one(*args[1:4])))
        return
    opts = {"--runs": "3", "--peers": ",".join(PEERS), "--data": os.path.join(HERE, "..", "data"),
            "--work": os.path.join(HERE, "..", "work", "python"), "--out": ""}
    while args:
        k = args.pop(0)
        if k not in opts or not args:
            raise SystemExit(__doc__)
        opts[k] = args.pop(0)
    peers = opts["--peers"].split(",")
    data = opts["--data"]
    if not os.path.exists(os.path.join(data, "kv.bin")):
        subprocess.run([sys.executable, os.path.join(HERE, "..", "gen_data.py"), data], check=True)
    rows = []
    for rnd in range(int(opts["--runs"])):
        order = peers[rnd % len(peers):] + peers[:rnd % len(peers)]
        for p in order:
            out = subprocess.run([sys.executable, __file__, "--one", p, data, opts["--work"]],
                                 check=True, capture_output=True, text=True).stdout
            row = json.loads(out)
            rows.append(row)
            print(json.dumps(row), file=sys.stderr)
            if opts["--out"]:
                with open(opts["--out"], "a") as f:
                    f.write(out)
    print(table(rows, peers))


if __name__ == "__main__":
    main()
