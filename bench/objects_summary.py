#!/usr/bin/env python3
"""Markdown tables from bench/objects.sh's JSON lines: best and median of
each measurement, and bale's ratios against the peers and targets."""
import json
import statistics
import sys
from collections import defaultdict

rows = [json.loads(l) for p in sys.argv[1:] for l in open(p) if l.strip().startswith("{")]
by = defaultdict(list)
for r in rows:
    key = (r["engine"], r["workload"], r.get("objects") if r["workload"] == "durable" else None)
    by[key].append(r)


def best(key, field):
    vals = [r[field] for r in by.get(key, []) if r.get(field) is not None]
    return (min(vals), statistics.median(vals)) if vals else (None, None)


def fmt(v):
    return "–" if v is None else (f"{v:.3f}" if v < 10 else f"{v:.1f}")


def cell(key, field):
    b, m = best(key, field)
    return f"{fmt(b)} / {fmt(m)}"


def ratio(peer, ours):
    return "–" if peer is None or ours in (None, 0) else f"{peer / ours:.1f}×"


print("## W4: 100,000 objects of 0..1000 B (seconds, best / median)\n")
print("| engine | write | bulk read | 100k single reads | on disk | files |")
print("| --- | --- | --- | --- | --- | --- |")
for e in ["bale", "dos-pack", "dos-loose", "git"]:
    k = (e, "w4", None)
    if k not in by:
        continue
    r = by[k][0]
    print(f"| {e} (Python{', ' + str(r['objects']) + ' objects' if r['objects'] != 100000 else ''}) | {cell(k, 'write_s')} | {cell(k, 'read_bulk_s')} | {cell(k, 'read_single_s')} | {r.get('disk_bytes', 0) / 1e6:.1f} MB | {r.get('files')} |")
k = ("bale", "w4", None)
rk = [r for r in rows if r["engine"] == "bale-rust" and r["workload"] == "w4"]
if rk:
    w = [r["write_s"] for r in rk]
    print(f"| bale (Rust) | {fmt(min(w))} / {fmt(statistics.median(w))} | {fmt(min(r['read_bulk_s'] for r in rk))} | {fmt(min(r['read_single_s'] for r in rk))} | {rk[0]['disk_bytes'] / 1e6:.1f} MB | {rk[0]['files']} |")
ours = {f: best(("bale", "w4", None), f)[0] for f in ["write_s", "read_bulk_s", "read_single_s"]}
dos = {f: best(("dos-pack", "w4", None), f)[0] for f in ["write_s", "read_bulk_s", "read_single_s"]}
print(f"\nbale from Python against disk-objectstore packs (best): write {ratio(dos['write_s'], ours['write_s'])} (target ≥ 5×), "
      f"bulk read {ratio(dos['read_bulk_s'], ours['read_bulk_s'])} (≥ 3×), single reads {ratio(dos['read_single_s'], ours['read_single_s'])} (≥ 20×); "
      f"against git: write {ratio(best(('git', 'w4', None), 'write_s')[0], ours['write_s'])}, bulk read {ratio(best(('git', 'w4', None), 'read_bulk_s')[0], ours['read_bulk_s'])}.\n")

print("\n## Durable small writes from 4 processes\n")
print("| engine | objects | seconds best / median | objects/s | lost |")
print("| --- | --- | --- | --- | --- |")
rates = {}
for (e, w, n), rs in sorted(by.items(), key=lambda x: str(x[0])):
    if w != "durable":
        continue
    b, m = best((e, w, n), "write_s")
    rates[e] = n / b
    print(f"| {e} | {n} | {fmt(b)} / {fmt(m)} | {n / b:,.0f} | {max(r['lost'] for r in rs)} |")
if "bale" in rates and "dos-loose" in rates:
    print(f"\nbale (batches of 1000) against disk-objectstore loose writes: {rates['bale'] / rates['dos-loose']:.0f}× the objects per second (target ≥ 20×); "
          f"one durable add per object: {rates.get('bale-one', 0) / rates['dos-loose']:.1f}×.\n")

print("## W5: one large file\n")
print("| engine | add s best / median | MB/s | peak RSS | 1 MiB changed: new bytes | read back MB/s |")
print("| --- | --- | --- | --- | --- | --- |")
for e in ["bale", "cp", "git"]:
    k = (e, "w5", None)
    if k not in by:
        continue
    r0 = by[k][0]
    b, m = best(k, "add_s")
    rss = max((r.get("peak_rss_kb") or 0) for r in by[k])
    readd = r0.get("readd_new_bytes")
    rd = best(k, "read_s")[0]
    name = e + (" + sync" if e == "cp" else (" add" if e == "git" else " (Python)"))
    read_mb = f"{r0['bytes'] / 1e6 / rd:,.0f}" if rd else "–"
    rss_s = f"{rss // 1024} MiB" if rss else "–"
    readd_s = readd if readd is not None else "–"
    print(f"| {name} | {fmt(b)} / {fmt(m)} | {r0['bytes'] / 1e6 / b:,.0f} | {rss_s} | {readd_s} | {read_mb} |")
rw = [r for r in rows if r["engine"] == "bale-rust" and r["workload"] == "w5"]
if rw:
    print(f"| bale (Rust) | {fmt(min(r['add_s'] for r in rw))} | {max(r['add_mb_s'] for r in rw):,.0f} | {max(r['peak_rss_kb'] for r in rw) // 1024} MiB | {rw[0]['readd_new_bytes']} | {max(r['read_mb_s'] for r in rw):,.0f} |")
b5 = best(("bale", "w5", None), "add_s")[0]
cp = best(("cp", "w5", None), "add_s")[0]
g = best(("git", "w5", None), "add_s")[0]
if b5 and cp:
    print(f"\nbale add against cp + sync: {b5 / cp:.2f}× the time (target ≤ 1.4×); against git add: {ratio(g, b5)} faster (target ≥ 15×).\n")

sc = [r for r in rows if r["workload"] == "scale"]
for cold in (False, True):
    part = [r for r in sc if bool(r.get("cold")) == cold]
    if not part:
        continue
    how = "page cache dropped before the walk and before the add" if cold else "files as the run left them in the page cache"
    print(f"## Scale: files of 1 KiB added with add_tree ({how})\n")
    print("| files | add s (best) | µs per file | CPU µs per file | plain walk µs per file | store files | store bytes |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    by = {}
    for r in part:
        by.setdefault(r["files"], []).append(r)
    bestrow = {}
    for n in sorted(by):
        rs = by[n]
        w = min(rs, key=lambda r: r["us_per_file"])
        cpu = min((r["cpu_us_per_file"] for r in rs if "cpu_us_per_file" in r), default=None)
        bestrow[n] = (w["us_per_file"], cpu)
        cpu_s = f"{cpu:.1f}" if cpu is not None else "–"
        walk = f"{w['walk_us_per_file']:.1f}" if "walk_us_per_file" in w else "–"
        print(f"| {n:,} | {w['add_s']:.2f} | {w['us_per_file']:.1f} | {cpu_s} | {walk} | {w['store_files']} | {w['store_bytes'] / 1e6:.1f} MB |")
    lo, hi = min(bestrow), max(bestrow)
    print(f"\ntime per file from {lo:,} to {hi:,} files: {bestrow[hi][0] / bestrow[lo][0]:.2f}× wall (target ≤ 1.5×)", end="")
    if bestrow[lo][1] and bestrow[hi][1]:
        print(f", {bestrow[hi][1] / bestrow[lo][1]:.2f}× CPU", end="")
    print("\n")
