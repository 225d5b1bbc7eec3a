#!/usr/bin/env python3
"""Summarise per-call read results (JSON lines from bench/percall.sh: the
Rust, Python and Node runs plus the `percall-store` lines) as markdown:
ops/s per host, engine and store, bale's ratios, and the targets.

usage: percall_summary.py FILE.jsonl [FILE.jsonl ...]

Rates: every timed pass of every run is one sample (N gets). "best" is the
fastest sample (the least disturbed one on a shared machine), "median" the
median sample, "spread" (best - slowest) / best over all samples.

Targets for bale (each host): best per-call rate >= 1.0x the LMDB peer's best
(in Python the fastest of the py-lmdb forms), and the large store's time per
get within 1.2x the small store's.
"""
import json
import sys
from statistics import median

# The LMDB reference of each host: the fastest of these engines.
LMDB = {"rust": ["heed"], "python": ["lmdb-with", "lmdb", "lmdb-buffers"], "node": ["lmdb-js"]}
BALE = {"rust": "bale", "python": "bale", "node": "bale"}
HOSTS = ["rust", "python", "node"]


def main(paths):
    samples, stores = {}, {}
    for p in paths:
        with open(p) as f:
            for line in f:
                line = line.strip()
                if not line.startswith("{"):
                    continue
                r = json.loads(line)
                if r.get("bench") == "percall":
                    key = (r["host"], r["engine"], r["store"])
                    samples.setdefault(key, []).extend(r["n"] / t for t in r["passes_s"])
                elif r.get("bench") == "percall-store":
                    stores[(r["store"], r["engine"])] = r
    out = []
    if stores:
        out += ["| store | engine | keys | large value | file bytes | allocated | pages |",
                "| --- | --- | --- | --- | --- | --- | --- |"]
        for (s, e), r in sorted(stores.items(), key=lambda x: (x[0][0] != "small", x[0][1])):
            out.append(f"| {s} | {e} | {r['n']:,} | {r['large_value_bytes'] / 2**30:g} GiB | "
                       f"{r['file_bytes']:,} | {r['file_alloc_bytes']:,} | "
                       + (f"{r['file_pages']:,}" if "file_pages" in r else "-") + " |")
        out.append("")
    out += ["| host | engine | store | samples | best ops/s | median ops/s | spread |",
            "| --- | --- | --- | --- | --- | --- | --- |"]
    order = lambda k: (HOSTS.index(k[0]) if k[0] in HOSTS else 9, k[1], k[2] != "small")
    for k in sorted(samples, key=order):
        v = samples[k]
        out.append(f"| {k[0]} | {k[1]} | {k[2]} | {len(v)} | {max(v):,.0f} | {median(v):,.0f} | "
                   f"{(max(v) - min(v)) / max(v) * 100:.0f} % |")
    best = {k: max(v) for k, v in samples.items()}
    med = {k: median(v) for k, v in samples.items()}
    out += ["", "Ratios from the best samples (from the medians in brackets); targets: bale / LMDB >= 1.00, "
            "bale small / large rate (= large / small time per get) <= 1.20.", "",
            "| host | LMDB peer (small / large) | bale / LMDB small | bale / LMDB large | bale large / small time | "
            "LMDB large / small time | meets targets |",
            "| --- | --- | --- | --- | --- | --- | --- |"]
    for h in HOSTS:
        b = BALE[h]
        if (h, b, "small") not in best:
            continue
        row, ok = [h], True

        def peer(store, table):
            c = [e for e in LMDB[h] if (h, e, store) in table]
            return max(c, key=lambda e: table[(h, e, store)]) if c else None

        row.append(" / ".join(str(peer(s, best)) for s in ("small", "large")))
        for s in ("small", "large"):
            p, pm = peer(s, best), peer(s, med)
            if p and (h, b, s) in best:
                r = best[(h, b, s)] / best[(h, p, s)]
                rm = med[(h, b, s)] / med[(h, pm, s)]
                ok &= r >= 1.0
                row.append(f"{r:.2f}× ({rm:.2f}×)")
            else:
                row.append("-")
        for e in (b, peer("large", best)):
            if e and (h, e, "large") in best and (h, e, "small") in best:
                r = best[(h, e, "small")] / best[(h, e, "large")]
                rm = med[(h, e, "small")] / med[(h, e, "large")]
                if e == b:
                    ok &= r <= 1.2
                row.append(f"{r:.2f}× ({rm:.2f}×)")
            else:
                row.append("-")
        row.append("yes" if ok else "**no**")
        out.append("| " + " | ".join(row) + " |")
    print("\n".join(out))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    main(sys.argv[1:])
