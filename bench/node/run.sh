#!/usr/bin/env bash
# W1-W3 for the bale Node package against lmdb-js and better-sqlite3, one
# process per run, engines interleaved (the first engine rotates each round
# so a noisy spell on the machine does not land on one engine only), then a
# markdown summary with min / median and ratios.
#
#   RUNS=3                   rounds
#   ENGINES="bale bale-async lmdb-js lmdb-js-async better-sqlite3"
#   DATA=bench/data          kv.bin + order.bin (made by bench/gen_data.py if missing)
#   WORK=bench/work/node     scratch space for the stores
#   OUT=bench/node/results/<time>.jsonl
#
# Needs the package built (make node-build, which bench-node depends on).
set -euo pipefail
cd "$(dirname "$0")/../.."

RUNS=${RUNS:-3}
ENGINES=${ENGINES:-"bale bale-async lmdb-js lmdb-js-async better-sqlite3"}
DATA=${DATA:-bench/data}
WORK=${WORK:-bench/work/node}
mkdir -p bench/node/results
OUT=${OUT:-bench/node/results/$(date +%Y%m%d-%H%M%S).jsonl}

if [[ ! -f $DATA/kv.bin || ! -f $DATA/order.bin ]]; then
    echo "== generating data in $DATA" >&2
    python3 bench/gen_data.py "$DATA" >&2
fi
# lmdb is a prebuilt package; better-sqlite3 compiles SQLite the first time (~1 min).
(cd bench/node && npm install --no-audit --no-fund --loglevel=error >&2)

: >"$OUT"
read -r -a engines <<<"$ENGINES"
ne=${#engines[@]}
for ((r = 0; r < RUNS; r++)); do
    for ((j = 0; j < ne; j++)); do
        e=${engines[$(((r + j) % ne))]}
        echo "== run $((r + 1))/$RUNS: $e" >&2
        node bench/node/kv_bench.mjs "$e" "$DATA" "$WORK/$e" | tee -a "$OUT" >&2
    done
done
echo "== raw results: $OUT" >&2
node bench/node/summarize.mjs "$OUT"
