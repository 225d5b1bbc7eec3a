#!/usr/bin/env bash
# Object store benchmark: bale against disk-objectstore (PyPI) and git, in
# one run, interleaved; then a markdown table of the results and the ratios
# the object store aims for (bench/objects_summary.py).
#
#   W4     100,000 objects of 0..1000 B from Python: write into packs, one
#          bulk read, 100,000 single reads (bale, disk-objectstore packs,
#          git fast-import / cat-file --batch); disk-objectstore's loose
#          writes on LOOSE_N objects
#   durable  small objects from 4 processes, durable: bale in batches of
#          1000 and one add per object, disk-objectstore loose writes
#          (DURABLE_N objects)
#   W5     one BIG_GIB GiB file: bale add_file (peak RSS), a copy with 1 MiB
#          changed, read back; cp + sync; git add (GIT_W5=0 skips it)
#   scale  bale add_tree of 10k, 100k and 1M files of 1 KiB (SCALE="...")
#
# Settings: RUNS=3, LOOSE_N=10000, DURABLE_N=100000, BIG_GIB=2,
#   SCALE="10000 100000 1000000", DATA=bench/data, WORK=bench/work/objects,
#   PYTHON=.venv/bin/python (bale and disk-objectstore installed:
#   `make bench-objects` does that), OUT=bench/results/objects-<date>.jsonl
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-3}
LOOSE_N=${LOOSE_N:-10000}
DURABLE_N=${DURABLE_N:-100000}
BIG_GIB=${BIG_GIB:-2}
SCALE=${SCALE:-"10000 100000 1000000"}
GIT_W5=${GIT_W5:-1}
DATA=${DATA:-bench/data}
WORK=${WORK:-bench/work/objects}
PYTHON=${PYTHON:-.venv/bin/python}
mkdir -p bench/results "$WORK"
OUT=${OUT:-bench/results/objects-$(date +%Y-%m-%d-%H%M%S)-$(git rev-parse --short HEAD 2>/dev/null || echo nogit).jsonl}

"$PYTHON" -c 'import bale, disk_objectstore' || { echo "$PYTHON needs bale and disk-objectstore (make bench-objects)" >&2; exit 1; }
command -v git >/dev/null || { echo "git is missing (apt-get install git)" >&2; exit 1; }
if [[ ! -f $DATA/objs.bin ]]; then
    echo "== generating data in $DATA" >&2
    python3 bench/gen_data.py "$DATA" >&2
fi
BIG=$DATA/big.bin
want=$((BIG_GIB * 1073741824))
if [[ ! -f $BIG || $(stat -c %s "$BIG") -ne $want ]]; then
    echo "== writing $BIG ($BIG_GIB GiB of random bytes)" >&2
    head -c "$want" /dev/urandom >"$BIG"
fi
echo "== building bale-bench (release)" >&2
cargo build --release --locked --manifest-path bench/Cargo.toml >&2
BIN=${CARGO_TARGET_DIR:-bench/target}/release/bale-bench
PY=bench/python/objects_bench.py

: >"$OUT"
run() { echo "-- $*" >&2; "$@" | tee -a "$OUT"; }
# Each W5 engine starts with BIG in the page cache (a VM may reclaim cold
# cache between runs, and a cold source would be charged to whoever runs first).
warm() { cat "$BIG" >/dev/null; }
for ((r = 0; r < RUNS; r++)); do
    run "$PYTHON" $PY bale w4 "$DATA" "$WORK/w4"
    run "$PYTHON" $PY dos-pack w4 "$DATA" "$WORK/w4"
    run "$PYTHON" $PY git w4 "$DATA" "$WORK/w4"
    run "$BIN" obj-w4 "$DATA" "$WORK/w4"
    run "$PYTHON" $PY bale durable "$DATA" "$WORK/durable" "$DURABLE_N"
    run "$PYTHON" $PY bale-one durable "$DATA" "$WORK/durable" "$LOOSE_N"
    warm && run "$PYTHON" $PY bale w5 "$DATA" "$WORK/w5"
    warm && run "$PYTHON" $PY cp w5 "$DATA" "$WORK/w5"
    warm && run "$BIN" obj-w5 "$BIG" "$WORK/w5"
done
# The slow peers once: disk-objectstore's loose writes, git add of BIG.
run "$PYTHON" $PY dos-loose w4 "$DATA" "$WORK/w4" "$LOOSE_N"
run "$PYTHON" $PY dos-loose durable "$DATA" "$WORK/durable" "$LOOSE_N"
[[ $GIT_W5 == 1 ]] && warm && run "$PYTHON" $PY git w5 "$DATA" "$WORK/w5"
for n in $SCALE; do
    run "$BIN" obj-scale "$n" "$WORK/scale"
done
rm -rf "$WORK"
echo "== raw results: $OUT" >&2
python3 bench/objects_summary.py "$OUT"
