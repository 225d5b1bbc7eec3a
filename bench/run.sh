#!/usr/bin/env bash
# Peer benchmark: bale against LMDB (heed), redb and SQLite (rusqlite) on
# W1-W3, then a large value streamed in and out of bale, then per-call reads
# (bench/percall.sh rust). Prints a markdown summary; the raw JSON lines are
# kept in $OUT.
#
#   bench/run.sh                 all of the above
#   bench/run.sh percall [HOST]  only the per-call reads (bench/percall.sh):
#                                every host (rust, python, node) or the ones
#                                named; same as ONLY=percall bench/run.sh
#
# Settings (environment):
#   ONLY=percall      run only the per-call reads (all hosts)
#   PERCALL=0         skip the per-call reads in a full run
#   RUNS=3            runs per engine (one process per run, interleaved)
#   ENGINES="bale heed redb rusqlite"
#   BIG_GIB=4         size of the large value in GiB (0 skips that run)
#   BIG_RUNS=3        runs of the large-value benchmark, with bale's memory
#                     map on (the default) and again with it off
#   DATA=bench/data   where gen_data.py writes its inputs (~170 MB)
#   WORK=bench/work   scratch space for the stores (needs BIG_GIB + ~1 GB free)
#   OUT=$WORK/results-<time>.jsonl
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ ${1:-} == percall ]]; then
    shift
    exec bench/percall.sh "$@"
elif [[ ${ONLY:-} == percall ]]; then
    exec bench/percall.sh "$@"
fi

RUNS=${RUNS:-3}
ENGINES=${ENGINES:-"bale heed redb rusqlite"}
BIG_GIB=${BIG_GIB:-4}
BIG_RUNS=${BIG_RUNS:-3}
DATA=${DATA:-bench/data}
WORK=${WORK:-bench/work}
mkdir -p "$WORK"
OUT=${OUT:-$WORK/results-$(date +%Y%m%d-%H%M%S).jsonl}
PY=${PYTHON:-python3}

command -v cargo >/dev/null || { echo "cargo is missing: install rustup (https://rustup.rs)" >&2; exit 1; }
command -v "$PY" >/dev/null || { echo "python3 is missing" >&2; exit 1; }

if [[ ! -f $DATA/kv.bin || ! -f $DATA/order.bin ]]; then
    echo "== generating data in $DATA" >&2
    "$PY" bench/gen_data.py "$DATA" >&2
fi

echo "== building bale-bench (release; compiles LMDB and SQLite the first time)" >&2
cargo build --release --locked --manifest-path bench/Cargo.toml >&2
BIN=${CARGO_TARGET_DIR:-bench/target}/release/bale-bench
[[ -x $BIN ]] || { echo "built binary not found at $BIN" >&2; exit 1; }

: >"$OUT"
read -r -a engines <<<"$ENGINES"
ne=${#engines[@]}
for ((r = 0; r < RUNS; r++)); do
    # Interleave the engines and rotate who goes first, so a noisy spell on
    # the machine does not land on one engine only.
    for ((j = 0; j < ne; j++)); do
        e=${engines[$(((r + j) % ne))]}
        echo "== kv run $((r + 1))/$RUNS: $e" >&2
        "$BIN" kv "$e" "$DATA" "$WORK/kv-$e" | tee -a "$OUT" >&2
    done
done

if [[ $BIG_GIB != 0 ]]; then
    for ((r = 0; r < BIG_RUNS; r++)); do
        for flag in "" --no-mmap; do
            echo "== bigvalue run $((r + 1))/$BIG_RUNS: $BIG_GIB GiB ${flag:-(mmap)}" >&2
            # shellcheck disable=SC2086 # $flag is one word or none
            "$BIN" bigvalue "$WORK/big" --gib "$BIG_GIB" $flag | tee -a "$OUT" >&2
        done
    done
fi

echo "== raw results: $OUT" >&2
echo
"$PY" bench/summarize.py "$OUT"

if [[ ${PERCALL:-1} != 0 ]]; then
    echo
    bench/percall.sh rust
fi
