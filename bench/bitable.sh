#!/usr/bin/env bash
# Bitable benchmark: bale against LMDB (heed, append flag) in one run,
# interleaved; then a markdown table with the ratios the format aims for
# (bench/bitable_summary.py).
#
#   build    N sorted pairs of 24-byte keys and 8-byte values: bale fast,
#            bale durable, LMDB; then 2,000,000 random lookups and a scan
#   merge    8 tables of 1,000,000 pairs merged into one
#   unsorted N pairs in a scrambled order, 64 MiB memory budget
#   python   PY_N pairs built and PY_N random lookups from Python: bale
#            (BitableWriter, Bitable.get) against py-lmdb (append puts, get)
#   node     NODE_N pairs and lookups from Node: bale (getSync) against
#            lmdb-js (getBinary, and getBinaryFast with its reused buffer)
#
# Settings: RUNS=3, N=10000000, MERGE_K=8, MERGE_N=1000000, BUDGET_MIB=64,
#   PY_N=2000000, PYTHON=.venv/bin/python (bale and lmdb installed: `make
#   bench-bitable` does that), WORK=bench/work/bitable,
#   OUT=bench/results/bitable-<date>.jsonl
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-3}
N=${N:-10000000}
MERGE_K=${MERGE_K:-8}
MERGE_N=${MERGE_N:-1000000}
BUDGET_MIB=${BUDGET_MIB:-64}
PY_N=${PY_N:-2000000}
NODE_N=${NODE_N:-1000000}
PYTHON=${PYTHON:-.venv/bin/python}
WORK=${WORK:-bench/work/bitable}
mkdir -p bench/results "$WORK"
OUT=${OUT:-bench/results/bitable-$(date +%Y-%m-%d-%H%M%S)-$(git rev-parse --short HEAD 2>/dev/null || echo nogit).jsonl}

"$PYTHON" -c 'import bale, lmdb' || { echo "$PYTHON needs bale and lmdb (make bench-bitable)" >&2; exit 1; }
command -v node >/dev/null || { echo "node is missing" >&2; exit 1; }
(cd bench/node && npm install --no-audit --no-fund --loglevel=error >&2)
echo "== building bale-bench (release)" >&2
cargo build --release --locked --manifest-path bench/Cargo.toml >&2
BIN=${CARGO_TARGET_DIR:-bench/target}/release/bale-bench

: >"$OUT"
run() { echo "-- $*" >&2; "$@" | tee -a "$OUT"; }
for ((r = 0; r < RUNS; r++)); do
    for e in bale-fast heed bale-durable; do
        run "$BIN" bt-build "$e" "$N" "$WORK/build"
    done
    run "$BIN" bt-merge "$MERGE_K" "$MERGE_N" "$WORK/merge"
    run "$BIN" bt-unsorted "$N" "$BUDGET_MIB" "$WORK/unsorted"
    for e in bale lmdb; do
        run "$PYTHON" bench/python/bitable_bench.py "$e" "$WORK/python" --pairs "$PY_N" --lookups "$PY_N"
    done
    for e in bale bale-into lmdb-js lmdb-js-fast; do
        run node bench/node/bitable_bench.mjs "$e" "$WORK/node" "$NODE_N"
    done
done
rm -rf "$WORK"
echo "== raw results: $OUT" >&2
python3 bench/bitable_summary.py "$OUT"
