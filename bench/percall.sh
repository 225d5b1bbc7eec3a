#!/usr/bin/env bash
# Per-call reads: a fresh snapshot / read transaction for every get, bale
# against LMDB from Rust (heed; redb too), Python (py-lmdb) and Node
# (lmdb-js), on a small store (N keys) and a large one (the same keys plus
# PERCALL_GIB GiB of incompressible data, so a very large page count). Then a
# markdown table of ops/s and bale's ratios against the targets.
#
#   bench/percall.sh [all|stores|rust|python|node ...]     (default: all)
#
#   stores  build the stores once (cached in $WORK, reused while N, the size
#           and the format stay the same; ~34 GiB + lmdb-js's 17 GiB at 16 GiB)
#   rust    bale-bench percall: bale (store.read() + get + drop), bale-get
#           (Store::get), heed (read_txn + get + drop), redb (small store only)
#   python  bench/python/percall_bench.py: t[key], t.get(key) against
#           py-lmdb's per-call forms
#   node    bench/node/percall_bench.mjs: refresh() + get against
#           resetReadTxn() + getBinaryFast
#
# Settings (environment):
#   RUNS=3            processes per engine and store (interleaved, rotated)
#   PASSES=3          timed passes of N gets per process (after one warm-up)
#   PERCALL_GIB=16    size of the large store's extra data
#   DATA=bench/data/percall-200k   gen_data.py output with N=200000
#   WORK=bench/work/percall        the stores
#   PYTHON=.venv/bin/python        with bale and lmdb installed (make python-install)
#   TAG=<date>-<commit>            names the raw result files:
#       bench/results/percall-$TAG.jsonl (Rust, and the store sizes),
#       bench/python/results/percall-$TAG.jsonl, bench/node/results/percall-$TAG.jsonl
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-3}
PASSES=${PASSES:-3}
PERCALL_GIB=${PERCALL_GIB:-16}
DATA=${DATA:-bench/data/percall-200k}
WORK=${WORK:-bench/work/percall}
PYTHON=${PYTHON:-.venv/bin/python}
TAG=${TAG:-$(date +%Y-%m-%d-%H%M%S)-$(git rev-parse --short HEAD 2>/dev/null || echo nogit)}
RUST_OUT=bench/results/percall-$TAG.jsonl
PY_OUT=bench/python/results/percall-$TAG.jsonl
NODE_OUT=bench/node/results/percall-$TAG.jsonl

parts=("$@")
[[ ${#parts[@]} -eq 0 || ${parts[0]} == all ]] && parts=(stores rust python node)
has() { local p; for p in "${parts[@]}"; do [[ $p == "$1" ]] && return 0; done; return 1; }

mkdir -p "$WORK" bench/results bench/python/results bench/node/results
if [[ ! -f $DATA/kv.bin || ! -f $DATA/order.bin ]]; then
    echo "== generating data in $DATA" >&2
    python3 bench/gen_data.py "$DATA" 200000 >&2
fi

echo "== building bale-bench (release)" >&2
cargo build --release --locked --manifest-path bench/Cargo.toml >&2
BIN=${CARGO_TARGET_DIR:-bench/target}/release/bale-bench

# The stores are checked (and built when missing) whichever host runs.
echo "== per-call stores in $WORK (${PERCALL_GIB} GiB large value; built once)" >&2
"$BIN" percall-build "$DATA" "$WORK" --gib "$PERCALL_GIB" >/dev/null
if has node; then
    (cd bench/node && npm install --no-audit --no-fund --loglevel=error >&2)
    node bench/node/percall_build.mjs "$DATA" "$WORK" "$PERCALL_GIB" >/dev/null
fi

outs=()
# One process per engine and store; the first engine rotates each round so a
# noisy spell on the machine does not land on one engine only.
rounds() { # host out cmd-prefix engines...
    local host=$1 out=$2 cmd=$3
    shift 3
    local engines=("$@") ne=$# r j s e
    cat "$WORK/stores.jsonl" >>"$out"
    [[ -f $WORK/stores-node.jsonl && $host == node ]] && cat "$WORK/stores-node.jsonl" >>"$out"
    for ((r = 0; r < RUNS; r++)); do
        for s in small large; do
            for ((j = 0; j < ne; j++)); do
                e=${engines[$(((r + j) % ne))]}
                [[ $e == redb && $s == large ]] && continue # redb: small store only
                echo "== $host per-call run $((r + 1))/$RUNS: $e on $s" >&2
                # shellcheck disable=SC2086 # $cmd is a command and its arguments
                $cmd "$e" "$DATA" "$WORK/$s" "$PASSES" | tee -a "$out" >&2
            done
        done
    done
    outs+=("$out")
}

if has rust; then
    : >"$RUST_OUT"
    rust_one() { "$BIN" percall "$1" "$2" "$3" --passes "$4"; }
    rounds rust "$RUST_OUT" rust_one bale bale-get heed redb
fi
if has python; then
    "$PYTHON" -c 'import bale, lmdb' 2>/dev/null || {
        echo "$PYTHON lacks bale or lmdb: run make python-install && $PYTHON -m pip install lmdb" >&2
        exit 1
    }
    : >"$PY_OUT"
    rounds python "$PY_OUT" "$PYTHON bench/python/percall_bench.py --one" bale bale-get lmdb-with lmdb lmdb-buffers
fi
if has node; then
    [[ -f bindings/node/index.js ]] && ls bindings/node/*.node >/dev/null 2>&1 || {
        echo "the Node package is not built: run make node-build" >&2
        exit 1
    }
    : >"$NODE_OUT"
    rounds node "$NODE_OUT" "node bench/node/percall_bench.mjs" bale lmdb-js bale-turn lmdb-js-turn
fi

if ((${#outs[@]})); then
    echo "== raw results: ${outs[*]}" >&2
    echo
    python3 bench/percall_summary.py "${outs[@]}"
fi
