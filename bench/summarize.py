#!/usr/bin/env python3
"""Turn bale-bench JSON lines into markdown tables: min / median per engine
and workload, bale's ratio to each peer, and the targets met or missed.

usage: summarize.py RESULTS.jsonl
MB = 10^6 bytes throughout.
"""
import json
import statistics
import sys

EXPECTED_CHECKSUM = 455102678  # default 1M data set of gen_data.py
PEERS = [("heed", "LMDB (heed)"), ("redb", "redb"), ("rusqlite", "SQLite (rusqlite)"),
         ("rusqlite-tuned", "SQLite tuned (rusqlite)")]
NAMES = dict([("bale", "bale")] + PEERS)

# (label, key, peer, max ratio to the peer's time)
TARGETS = [("W1 bulk load", "w1_s", "heed", 0.8),
           ("W2 random gets", "w2_s", "heed", 1.0),
           ("W3 ordered scan", "w3_s", "heed", 1.5)]
FILE_MB_MAX = 150
RSS_MB_MAX = 64


def load(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                rows.append(json.loads(line))
    return rows


def mm(xs):
    return min(xs), statistics.median(xs)


def fmt_s(x):
    return f"{x:.4f}" if x < 0.1 else f"{x:.3f}" if x < 10 else f"{x:.2f}"


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    rows = load(sys.argv[1])
    kv = {}
    for r in rows:
        if r.get("bench", "kv") == "kv":
            kv.setdefault(r["peer"], []).append(r)
    big = [r for r in rows if r.get("bench") == "bigvalue"]
    out = []
    p = out.append

    if kv:
        n = {r["n"] for rs in kv.values() for r in rs}
        sums = {r["checksum"] for rs in kv.values() for r in rs}
        runs = {e: len(rs) for e, rs in kv.items()}
        p(f"### W1–W3, {', '.join(str(x) for x in sorted(n))} pairs; runs per engine: "
          + ", ".join(f"{e} {c}" for e, c in runs.items()))
        p("")
        if len(sums) == 1:
            cs = sums.pop()
            note = "the expected value" if cs == EXPECTED_CHECKSUM else \
                f"NOT {EXPECTED_CHECKSUM} (a data set other than the default 1M one?)"
            p(f"Checksum identical for every run of every engine: {cs} ({note}).")
        else:
            p(f"**CHECKSUM MISMATCH** across runs: {sorted(sums)} — some engine read wrong data.")
        p("")
        p("Seconds, **min** / median of the runs (lower is better); file size after W1 "
          "(apparent MB; allocated in brackets when different); peak RSS (VmHWM) at the end of W1 "
          "and of the whole run, input data (~120 MB) and file pages the engine mapped included.")
        p("")
        p("| engine | W1 load s | W2 gets s | W3 scan s | µs/get (min) | file MB | peak RSS MB W1 / all |")
        p("| --- | --- | --- | --- | --- | --- | --- |")
        order = ["bale"] + [e for e, _ in PEERS]
        order += [e for e in kv if e not in order]
        stats = {}
        for e in order:
            if e not in kv:
                continue
            rs = kv[e]
            st = {k: mm([r[k] for r in rs]) for k in ("w1_s", "w2_s", "w3_s")}
            stats[e] = st
            fb = statistics.median([r["file_bytes"] for r in rs]) / 1e6
            fa = statistics.median([r["file_alloc_bytes"] for r in rs]) / 1e6
            size = f"{fb:.1f}" + (f" ({fa:.1f})" if abs(fa - fb) > 0.05 * fb else "")
            rss = max(r.get("peak_rss_kb", 0) for r in rs) / 1024
            w1rss = [r["w1_peak_rss_kb"] / 1024 for r in rs if "w1_peak_rss_kb" in r]
            rss = (f"{max(w1rss):.0f} / " if w1rss else "– / ") + f"{rss:.0f}"
            name = NAMES.get(e, e)
            if e == "bale":
                name = "**bale**"
            cells = [f"{fmt_s(a)} / {fmt_s(b)}" for a, b in st.values()]
            usget = st["w2_s"][0] / rs[0]["n"] * 1e6
            p(f"| {name} | " + " | ".join(cells) + f" | {usget:.2f} | {size} | {rss} |")
        p("")
        if "bale" in stats:
            p("bale's time divided by the peer's (below 1 = bale faster); min-to-min, "
              "and median-to-median in brackets:")
            p("")
            p("| ratio | W1 load | W2 gets | W3 scan |")
            p("| --- | --- | --- | --- |")
            b = stats["bale"]
            for e, name in PEERS:
                if e not in stats:
                    continue
                cells = [f"{b[k][0] / stats[e][k][0]:.2f}× ({b[k][1] / stats[e][k][1]:.2f}×)"
                         for k in ("w1_s", "w2_s", "w3_s")]
                p(f"| bale / {name} | " + " | ".join(cells) + " |")
            p("")
            if "bale_stat" in kv["bale"][0]:
                s = kv["bale"][0]["bale_stat"]
                p(f"bale tree after W1: page size {s['page_size']}, {s['file_pages']} file pages, "
                  f"depth {s['depth']}, {s['leaf_pages']} leaf + {s['branch_pages']} branch pages, "
                  f"fill {s['fill']:.1%}, {s['free_pages']} free pages.")
                p("")

    targets = []
    if "bale" in kv:
        b = {k: mm([r[k] for r in kv["bale"]]) for k in ("w1_s", "w2_s", "w3_s")}
        for label, k, peer, mx in TARGETS:
            if peer not in kv:
                continue
            pk = mm([r[k] for r in kv[peer]])
            ratio = b[k][0] / pk[0]
            med = b[k][1] / pk[1]
            verdict = "met" if ratio <= mx else f"missed by {ratio / mx - 1:.0%}"
            targets.append((f"{label} ≤ {mx}× LMDB", f"{ratio:.2f}× (median {med:.2f}×)", verdict))
        fb = statistics.median([r["file_bytes"] for r in kv["bale"]]) / 1e6
        verdict = "met" if fb <= FILE_MB_MAX else f"missed by {fb / FILE_MB_MAX - 1:.0%}"
        targets.append((f"file after W1 ≤ {FILE_MB_MAX} MB", f"{fb:.1f} MB", verdict))

    if big:
        p(f"### Large value: put_stream + commit, then reader(), {len(big)} run(s)")
        p("")
        p("| mmap | size | write s (MB/s best) | read s (MB/s best) | generator s | stored MB | "
          "peak RSS MB write / read (max) | of which heap (anon) MB | verified |")
        p("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        groups = {}
        for r in big:
            groups.setdefault((r["mmap"], r["bytes"]), []).append(r)
        for (mmap, size), rs in groups.items():
            w = mm([r["write_s"] for r in rs])
            rd = mm([r["read_s"] for r in rs])
            g = statistics.median([r["gen_s"] for r in rs])
            wp = max(r["write_peak_rss_kb"] for r in rs) / 1024
            rp = max(r["read_peak_rss_kb"] for r in rs) / 1024
            wa = max(r["write_anon_peak_kb"] for r in rs) / 1024
            ra = max(r["read_anon_peak_kb"] for r in rs) / 1024
            stored = statistics.median([r["large_stored_bytes"] for r in rs]) / 1e6
            ok = all(r["verified"] for r in rs)
            p(f"| {'on' if mmap else 'off'} | {size / 2**30:g} GiB | {fmt_s(w[0])} / {fmt_s(w[1])} "
              f"({size / 1e6 / w[0]:.0f}) | {fmt_s(rd[0])} / {fmt_s(rd[1])} ({size / 1e6 / rd[0]:.0f}) | "
              f"{g:.2f} | {stored:.0f} | {wp:.0f} / {rp:.0f} | {wa:.0f} / {ra:.0f} | "
              f"{'yes' if ok else '**NO**'} |")
            peak = max(wp, rp)
            verdict = "met" if peak <= RSS_MB_MAX else f"missed ({peak / RSS_MB_MAX:.1f}× the limit)"
            targets.append((f"{size / 2**30:g} GiB value peak RSS ≤ {RSS_MB_MAX} MB "
                            f"(VmHWM, mmap {'on' if mmap else 'off'})",
                            f"{peak:.0f} MB (heap {max(wa, ra):.0f} MB)", verdict))
        p("")

    if targets:
        p("### Targets")
        p("")
        p("| target | bale | verdict |")
        p("| --- | --- | --- |")
        for t in targets:
            p("| " + " | ".join(t) + " |")
        p("")
    print("\n".join(out))


if __name__ == "__main__":
    main()
