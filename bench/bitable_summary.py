#!/usr/bin/env python3
"""Markdown tables from bench/bitable.sh's JSON lines: best and median of
each measurement, and bale's ratios against LMDB and the targets."""
import json
import statistics
import sys
from collections import defaultdict

rows = [json.loads(l) for p in sys.argv[1:] for l in open(p) if l.strip().startswith("{")]
by = defaultdict(list)
for r in rows:
    by[(r["engine"], r["workload"])].append(r)


def vals(key, field):
    return [r[field] for r in by.get(key, []) if r.get(field) is not None]


def hi(key, field):
    """Best (highest) and median of a rate."""
    v = vals(key, field)
    return (max(v), statistics.median(v)) if v else (None, None)


def lo(key, field):
    """Best (lowest) and median of a time or size."""
    v = vals(key, field)
    return (min(v), statistics.median(v)) if v else (None, None)


def m(v, unit=1e6, digits=2):
    return "–" if v is None else f"{v / unit:.{digits}f}"


def pair(t, unit=1e6, digits=2):
    return f"{m(t[0], unit, digits)} / {m(t[1], unit, digits)}"


def ratio(a, b):
    return "–" if a is None or b in (None, 0) else f"{a / b:.2f}×"


build = [("bale-fast", "bale, fast"), ("bale-durable", "bale, durable"), ("heed", "LMDB (heed), append")]
n = next((r["pairs"] for r in rows if r["workload"] == "bt-build"), 0)
print(f"## Build, lookups and scan: {n:,} pairs of 24-byte keys and 8-byte values (best / median)\n")
print("| engine | build M pairs/s | build s | file MB | 2M random lookups, M/s | scan MB/s |")
print("| --- | --- | --- | --- | --- | --- |")
for e, name in build:
    k = (e, "bt-build")
    if k not in by:
        continue
    print(
        f"| {name} | {pair(hi(k, 'pairs_per_s'))} | {pair(lo(k, 'build_s'), 1, 3)} | "
        f"{m(lo(k, 'file_bytes')[0], 1e6, 0)} | {pair(hi(k, 'lookups_per_s'))} | {pair(hi(k, 'scan_mb_s'), 1, 0)} |"
    )
fast, dur, lm = (hi((e, "bt-build"), "pairs_per_s")[1] for e in ("bale-fast", "bale-durable", "heed"))
look, lmlook = (hi((e, "bt-build"), "lookups_per_s")[1] for e in ("bale-fast", "heed"))
scan = hi(("bale-fast", "bt-build"), "scan_mb_s")[1]
print("\n| measure (medians) | value | target |")
print("| --- | --- | --- |")
print(f"| fast build | {m(fast)} M pairs/s | ≥ 10 M pairs/s |")
print(f"| fast build vs LMDB append | {ratio(fast, lm)} | ≥ 3× |")
print(f"| durable build vs LMDB append | {ratio(dur, lm)} | reported |")
print(f"| lookups | {m(look)} M/s | ≥ 1 M/s |")
print(f"| lookups vs LMDB | {ratio(look, lmlook)} | ≥ 1.5× |")
print(f"| full scan | {m(scan, 1, 0)} MB/s | ≥ 1000 MB/s |")
checks = {r["checksum"] for r in rows if r["workload"] == "bt-build"}
print(f"\nAll engines read the same data: {'yes' if len(checks) == 1 else 'NO: ' + str(sorted(checks))}.")

k = ("bale", "bt-merge")
if k in by:
    r0 = by[k][0]
    print(f"\n## Merge of {r0['inputs']} tables into one ({r0['pairs']:,} pairs)\n")
    print(f"{pair(hi(k, 'pairs_per_s'))} M pairs/s, {pair(lo(k, 'merge_s'), 1, 3)} s (best / median)")
k = ("bale", "bt-unsorted")
if k in by:
    r0 = by[k][0]
    print(f"\n## Unsorted build of {r0['pairs']:,} pairs in a {r0['budget_mib']} MiB budget\n")
    print(
        f"{pair(lo(k, 'build_s'), 1, 3)} s, {pair(hi(k, 'pairs_per_s'))} M pairs/s, "
        f"{r0['runs']} sorted runs, peak RSS {pair(lo(k, 'peak_rss_kb'), 1024, 1)} MiB (best / median)"
    )

hosts = [("python-bale", "bale (Python)"), ("python-lmdb", "py-lmdb")]
if any((e, "bt-python") in by for e, _ in hosts):
    r0 = next(r for r in rows if r["workload"] == "bt-python")
    print(f"\n## From Python: {r0['pairs']:,} pairs built, {r0['lookups']:,} random lookups (best / median)\n")
    print("| engine | build M pairs/s | lookups M/s |")
    print("| --- | --- | --- |")
    for e, name in hosts:
        k = (e, "bt-python")
        if k in by:
            print(f"| {name} | {pair(hi(k, 'pairs_per_s'))} | {pair(hi(k, 'lookups_per_s'))} |")
    ours, peer = (hi((e, "bt-python"), "lookups_per_s")[1] for e, _ in hosts)
    print(f"\nLookups from Python, bale vs py-lmdb (medians): {ratio(ours, peer)} (target ≥ 1.0×).")

hosts = [("node-bale", "bale (Node, getSync)"), ("node-lmdb-js", "lmdb-js (getBinary)"),
         ("node-bale-into", "bale (Node, getInto, reused buffer)"), ("node-lmdb-js-fast", "lmdb-js (getBinaryFast, reused buffer)")]
if any((e, "bt-node") in by for e, _ in hosts):
    r0 = next(r for r in rows if r["workload"] == "bt-node")
    print(f"\n## From Node: {r0['pairs']:,} pairs built, {r0['lookups']:,} random lookups (best / median)\n")
    print("| engine | build M pairs/s | lookups M/s |")
    print("| --- | --- | --- |")
    for e, name in hosts:
        k = (e, "bt-node")
        if k in by:
            print(f"| {name} | {pair(hi(k, 'pairs_per_s'))} | {pair(hi(k, 'lookups_per_s'))} |")
    med = {e: hi((e, "bt-node"), "lookups_per_s")[1] for e, _ in hosts if (e, "bt-node") in by}
    print(f"\nLookups from Node, bale vs lmdb-js (medians): getSync {ratio(med['node-bale'], med['node-lmdb-js'])} "
          f"of getBinary (a Buffer per value each)", end="")
    if "node-bale-into" in med:
        print(f", getInto {ratio(med['node-bale-into'], med['node-lmdb-js-fast'])} of getBinaryFast "
              "(one reused buffer each)", end="")
    print(" (target ≥ 1.0×).")
