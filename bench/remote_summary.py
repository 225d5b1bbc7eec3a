#!/usr/bin/env python3
"""Markdown tables from bench/remote.sh's JSON lines: one run (the last in
the file, or the one named), with the bale / restic ratios.

  remote_summary.py RESULTS.jsonl [RUN]
"""
import json
import statistics
import sys

MIB = 1 << 20

if not 2 <= len(sys.argv) <= 3:
    raise SystemExit(__doc__)
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip().startswith("{")]
runs = [r["run"] for r in rows if r.get("step") == "settings"]
if not runs:
    raise SystemExit(f"{sys.argv[1]}: no run")
run = sys.argv[2] if len(sys.argv) == 3 else runs[-1]
rows = [r for r in rows if r["run"] == run]
if not rows:
    raise SystemExit(f"{sys.argv[1]}: no run {run}")


def step(name, **kw):
    return [r for r in rows if r.get("step") == name and all(r.get(k) == v for k, v in kw.items())]


def f(v, digits=2):
    if v is None:
        return "–"
    return f"{v:,.{digits}f}" if v < 1000 else f"{v:,.0f}"


def mib(n):
    return f"{n / MIB:,.1f} MiB"


settings = step("settings")[0]
done = step("done")
print(f"Run {run}: {settings['host_cpus']} CPUs, load {settings['load_before']} before"
      + (f", {done[0]['load_after']} after; {done[0]['seconds']} s in all" if done else "")
      + f"; restic {settings['restic_version']}, s3s-fs {settings['s3s_fs_version']}.\n")

add = step("add")
pushes = step("push", engine="bale")
restics = step("push", engine="restic")


def best_median(xs):
    return min(xs), statistics.median(xs)


if pushes or restics:
    tree = add[0]["add"] if add else None
    size = tree["bytes"] if tree else restics[0]["summary"]["total_bytes_processed"]
    print(f"## Push of a tree of {tree['files'] if tree else '?':,} files, {mib(size)} (s3s-fs on 127.0.0.1)\n")
    add_s = add[0]["seconds"] if add else None
    if add:
        print(f"`bale obj add` of the tree into a local store first: {f(add_s)} s ({f(size / MIB / add_s, 1)} MiB/s).\n")
    print("| engine | pack size | jobs | seconds, best / median | MiB/s (best) | requests (client / server) | packs "
          "| in bucket | restic ÷ bale: push | add + push |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    best_restic = None
    if restics:
        r = restics[0]
        best_restic, med = best_median([x["seconds"] for x in restics])
        print(f"| restic backup ({len(restics)} runs) | {r.get('opts') or '16 MiB (default)'} | 5 connections (default) "
              f"| {f(best_restic)} / {f(med)} | {f(size / MIB / best_restic, 1)} | – / {r['server_requests']['total']} "
              f"| {r['restic_packs']} | {mib(r['stored_bytes'])} | | |")
    configs = []
    for r in pushes:
        if (r["pack_size"], r["jobs"]) not in configs:
            configs.append((r["pack_size"], r["jobs"]))
    for ps, j in configs:
        rs = [r for r in pushes if (r["pack_size"], r["jobs"]) == (ps, j)]
        b, m = best_median([r["seconds"] for r in rs])
        p = rs[0]["push"]
        ratio = f"{best_restic / b:.2f}×" if best_restic else "–"
        ratio_add = f"{best_restic / (b + add_s):.2f}×" if best_restic and add_s else "–"
        print(f"| bale push | {ps} | {j} | {f(b)} / {f(m)} | {f(size / MIB / b, 1)} "
              f"| {p['traffic']['requests']} / {rs[0]['server_requests']['total']} | {len(p['packs'])} "
              f"| {mib(rs[0]['stored_bytes'])} | {ratio} | {ratio_add} |")
    print(f"\nSeconds are the wall clock of the command; runs of each push: {len(pushes) // max(1, len(configs))}. "
          "Ratios: restic's best backup over bale's best push, and over bale's add plus push (restic reads, "
          "chunks and hashes the files during its backup; bale did that in its add).\n")

reads = step("read")
if reads:
    print(f"## Lazy reads ({reads[0]['pack_size']} packs, {reads[0]['read']['objects']} objects picked at random)\n")
    print("| remote | lazy clone: s / requests / received | cold p50 ms | cold p99 ms | cold mean ms "
          "| warm p50 ms | warm p99 ms | requests per cold read |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in reads:
        rd = r["read"]
        lz = next((x for x in step("lazy-clone") if x.get("bucket") == r.get("bucket")), None)
        lzs = (f"{f(lz['seconds'])} s / {lz['pull']['traffic']['requests']} / {mib(lz['pull']['traffic']['bytes_received'])}"
               if lz else "–")
        name = {"s3s": "s3s-fs bucket", "folder": "folder (file://)"}.get(r.get("bucket"), r.get("bucket"))
        print(f"| {name} | {lzs} | {f(rd['cold']['p50_ms'], 3)} | {f(rd['cold']['p99_ms'], 3)} "
              f"| {f(rd['cold']['mean_ms'], 3)} | {f(rd['warm']['p50_ms'], 3)} | {f(rd['warm']['p99_ms'], 3)} "
              f"| {rd['requests'] / rd['objects']:.2f} |")
    rd = reads[0]["read"]
    print(f"\nThe cold reads fetched {mib(rd['bytes_received'])} for {mib(rd['content_bytes'])} of content "
          f"({rd['objects']} objects); each is one range read (or a few, for a chunked object) and a durable "
          "commit into the clone.\n")

edits = step("edit")
if edits:
    def one(engine, rnd):
        return next((r for r in edits if r["engine"] == engine and r["round"] == rnd), None)

    b1, b2, r1, r2 = one("bale", "first"), one("bale", "second"), one("restic", "first"), one("restic", "second")
    size = (b2 or r2)["file_bytes"]
    pct = (b2 or r2)["percent"]
    print(f"## A {pct} % edit of a {mib(size)} file (one contiguous region in the middle; s3s-fs)\n")
    print("| engine | first round s | second round s | bytes sent / data added | ÷ file size | requests (server) |")
    print("| --- | --- | --- | --- | --- | --- |")
    if b2:
        sent = b2["push"]["bytes_sent"]
        print(f"| bale add + push | {f(b1['add_seconds'] + b1['seconds'])} | {f(b2['add_seconds'] + b2['seconds'])} "
              f"| {sent:,} | {100 * sent / size:.3f} % | {b2['server_requests']['total']} |")
    if r2:
        added = r2["summary"]["data_added"]
        print(f"| restic backup | {f(r1['seconds'])} | {f(r2['seconds'])} | {added:,} | {100 * added / size:.3f} % "
              f"| {r2['server_requests']['total']} |")
    if b2 and r2:
        e = b2.get("edit", {})
        print(f"\nRewritten: {e.get('length', 0):,} bytes at offset {e.get('offset', 0):,}. bale's second push sent "
              f"{b2['push']['bytes_sent'] / max(1, e.get('length', 1)):.2f}× the rewritten bytes (packs and their "
              f"indexes); restic's data_added (new blobs before compression) is "
              f"{r2['summary']['data_added'] / max(1, e.get('length', 1)):.2f}× them; "
              f"bale / restic: {b2['push']['bytes_sent'] / max(1, r2['summary']['data_added']):.2f}×.\n")

commits = step("commits")
if commits:
    print("## Commits racing on one manifest (moto's server mode: Python, one request at a time)\n")
    print("| writers | commits | seconds | commits/s | attempts per commit | push p50 ms | push p99 ms "
          "| requests per commit | GET / PUT / refused (412) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in commits:
        c = r["result"]
        q = r.get("server_requests") or {}
        per = f"{q['total'] / c['commits']:.1f}" if q else "–"
        kinds = f"{q.get('GET', 0)} / {q.get('PUT', 0) + q.get('PUT 412', 0)} / {q.get('PUT 412', 0)}" if q else "–"
        print(f"| {c['writers']} | {c['commits']} | {f(c['seconds'])} | {f(c['commits_per_second'], 1)} "
              f"| {c['attempts_per_commit']:.2f} | {f(c['push']['p50_ms'], 1)} | {f(c['push']['p99_ms'], 1)} "
              f"| {per} | {kinds} |")
    print("\ncommits/s is all writers' commits over the time until the last writer was done.")
