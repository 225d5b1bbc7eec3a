#!/usr/bin/env bash
# Remote benchmark: an object store pushed to and read from local S3
# servers (tests/s3/with-server.sh), beside restic (Debian's package)
# backing up the same data to the same server; then markdown tables and the
# bale / restic ratios (bench/remote_summary.py).
#
#   push     a deterministic tree of REMOTE_SMALL small files (0.5-64 KiB,
#            half text, half random) and random files of 2-48 MiB,
#            REMOTE_MIB MiB in all: `bale obj add` into a local store once,
#            then `bale obj push` into a fresh prefix for each pack size in
#            PACK_SIZES and each --jobs in JOBS; `restic backup` of the same
#            folder into a fresh repository before each of ROUNDS rounds of
#            these pushes and once after the last: seconds, MiB/s, requests
#            (the client's count and the server's), packs, bytes in the bucket
#   read     a lazy clone (`obj pull --lazy`) of the first round's push with
#            pack size READ_PACK and 4 jobs, then `bale bench remote-read`
#            of READ_SAMPLES objects: cold (range reads from the bucket) and
#            warm (the same objects, now local) p50 / p99; then the same
#            through a folder remote (file://, no HTTP: bale's own share)
#   edit     one file of REMOTE_BIG_MIB MiB of random bytes added and pushed,
#            EDIT_PERCENT % of it rewritten in one contiguous region in its
#            middle, added and pushed again: the second push's bytes_sent
#            over the file's size; then, the edit undone, restic backs the
#            folder holding the file up before and after the same edit: its
#            second backup's data_added (the push and read steps' data is
#            gone by then: the peak is about 6 GiB under WORK)
#   commits  `bale bench remote-commits`: WRITERS (each count in turn)
#            writers in threads of one process, each with its own store,
#            making COMMITS commits each on one manifest (commits/s,
#            attempts per commit, push latency)
#
# push, read and edit run on s3s-fs (Rust, serves requests in parallel;
# its conditional writes are not atomic, so its remotes are added with
# --single-writer: one writer at a time here). commits runs on moto's server
# mode (Python, one request at a time, atomic), which caps the rate. Both
# on 127.0.0.1, their buckets under WORK; s3s-fs counts the requests it
# serves (RUST_LOG=s3s=debug, one "resolved route" line per request).
#
# Settings: REMOTE_MIB=1024, REMOTE_SMALL=3000, PACK_SIZES="8M 32M 64M",
#   JOBS="1 4", ROUNDS=2, RESTIC_OPTS="" (extra flags of restic backup,
#   e.g. "--pack-size 64"), READ_PACK=32M, READ_SAMPLES=200,
#   REMOTE_BIG_MIB=2048, EDIT_PERCENT=1, WRITERS="1 2 4 8", COMMITS=20,
#   STEPS="push read edit commits", WORK=bench/work/remote (removed at the
#   end unless KEEP=1), BALE=<target>/release/bale, S3S_FS=s3s-fs,
#   S3_PYTHON=.venv/bin/python (moto installed),
#   OUT=bench/results/remote-<date>.jsonl (appended to; each row names its run).
# `make bench-remote` installs restic, moto and s3s-fs and builds bale first.
set -euo pipefail
cd "$(dirname "$0")/.."
SELF=$PWD/bench/remote.sh

export REMOTE_MIB=${REMOTE_MIB:-1024}
export REMOTE_SMALL=${REMOTE_SMALL:-3000}
export PACK_SIZES=${PACK_SIZES:-"8M 32M 64M"}
export JOBS=${JOBS:-"1 4"}
export ROUNDS=${ROUNDS:-2}
export RESTIC_OPTS=${RESTIC_OPTS:-}
export READ_PACK=${READ_PACK:-32M}
export READ_SAMPLES=${READ_SAMPLES:-200}
export REMOTE_BIG_MIB=${REMOTE_BIG_MIB:-2048}
export EDIT_PERCENT=${EDIT_PERCENT:-1}
export WRITERS=${WRITERS:-"1 2 4 8"}
export COMMITS=${COMMITS:-20}
export STEPS=${STEPS:-"push read edit commits"}
export WORK=${WORK:-bench/work/remote}
export BALE=${BALE:-${CARGO_TARGET_DIR:-target}/release/bale}
export S3S_FS=${S3S_FS:-s3s-fs}
export S3_PYTHON=${S3_PYTHON:-.venv/bin/python}
export OUT=${OUT:-bench/results/remote-$(date +%Y-%m-%d).jsonl}
KEEP=${KEEP:-0}

has_step() { [[ " $STEPS " == *" $1 "* ]]; }

# One JSON line into OUT (and stderr): KEY=VALUE pairs, numbers as numbers,
# KEY=@FILE for a command's JSON output.
emit() {
    python3 - "$@" <<'PY' | tee -a "$OUT" >&2
import json, os, sys
row = {"bench": "remote", "run": os.environ["RUN"], "commit": os.environ["COMMIT"],
       "server": os.environ.get("BALE_S3_SERVER")}
for a in sys.argv[1:]:
    k, v = a.split("=", 1)
    if v.startswith("@"):
        v = json.load(open(v[1:]))
    else:
        for t in (int, float):
            try:
                v = t(v)
                break
            except ValueError:
                pass
    row[k] = v
print(json.dumps(row))
PY
}

# Runs a command, setting WALL to its wall-clock seconds.
timed() {
    local t0 t1
    t0=$(date +%s%N)
    "$@"
    t1=$(date +%s%N)
    WALL=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')
}

# ---- inside a server (tests/s3/with-server.sh runs this script again) ----

# The server's log so far, in lines; then the requests it served since,
# by operation: s3s-fs's (RUST_LOG=s3s=debug) or by method and, when not
# 2xx, status: moto's (werkzeug logs one line per request).
mark() { wc -l <"$BALE_S3_LOG"; }
ops_since() {
    python3 - "$BALE_S3_LOG" "$1" >"$2" <<'PY'
import collections, json, re, sys
lines = open(sys.argv[1], errors="replace").read().splitlines()[int(sys.argv[2]):]
ops = collections.Counter()
for l in lines:
    l = re.sub(r"\x1b\[[0-9;]*m", "", l)  # werkzeug colours failures
    if m := re.search(r"resolved route, op: (\w+)", l):
        ops[m.group(1)] += 1
    elif m := re.search(r'"([A-Z]+) \S+ HTTP/[\d.]+" (\d{3})', l):
        ops[m.group(1) + ("" if m.group(2).startswith("2") else " " + m.group(2))] += 1
print(json.dumps({"total": sum(ops.values()), **dict(sorted(ops.items()))}))
PY
}
# Bytes and files under a prefix of the bucket (s3s-fs keeps it as a folder).
stored() {
    local d=$BALE_S3_ROOT/$BALE_S3_BUCKET/$1
    echo "stored_bytes=$(du -sb "$d" | cut -f1)" "stored_files=$(find "$d" -type f | wc -l)"
}
drop_prefix() { rm -rf "${BALE_S3_ROOT:?}/$BALE_S3_BUCKET/$1"; }
s3url() { echo "s3://$BALE_S3_BUCKET/$1"; }
where() { echo --endpoint "$BALE_S3_ENDPOINT" --path-style --single-writer; }

restic_repo() { echo "s3:$BALE_S3_ENDPOINT/$BALE_S3_BUCKET/$1"; }
# restic backup of $2 into repository prefix $1 (created when new); its
# summary into $3, the server's count of requests into $4; sets WALL.
restic_backup() {
    local repo
    repo=$(restic_repo "$1")
    [[ -d $BALE_S3_ROOT/$BALE_S3_BUCKET/$1 ]] || restic -r "$repo" init >/dev/null
    local m
    m=$(mark)
    # shellcheck disable=SC2086
    timed restic -r "$repo" backup --json --host bench $RESTIC_OPTS "$2" >"$T/restic.out"
    grep '"message_type":"summary"' "$T/restic.out" | tail -n 1 >"$3"
    ops_since "$m" "$4"
}

# A lazy clone of remote URL (bucket s3s or folder), then READ_SAMPLES
# cold and warm reads of it.
lazy_reads() {
    local kind=$1 url=$2 clone=$WORK/clone m
    shift 2
    echo "== lazy clone of $url, then $READ_SAMPLES reads" >&2
    rm -rf "$clone"
    "$BALE" obj init "$clone" >/dev/null
    "$BALE" obj remote add "$clone" origin "$url" "$@" >/dev/null
    m=$(mark)
    timed "$BALE" --json obj pull "$clone" origin --lazy >"$T/lazy.json"
    ops_since "$m" "$T/ops.json"
    emit step=lazy-clone engine=bale bucket="$kind" pack_size="$READ_PACK" seconds="$WALL" pull=@"$T/lazy.json" \
        server_requests=@"$T/ops.json"
    m=$(mark)
    "$BALE" --json bench remote-read "$clone" origin --samples "$READ_SAMPLES" >"$T/read.json"
    ops_since "$m" "$T/ops.json"
    emit step=read engine=bale bucket="$kind" pack_size="$READ_PACK" samples="$READ_SAMPLES" read=@"$T/read.json" \
        server_requests=@"$T/ops.json"
    rm -rf "$clone"
}

on_s3s() {
    T=$WORK/t
    mkdir -p "$T"
    export RESTIC_PASSWORD=bench RESTIC_CACHE_DIR=$WORK/restic-cache
    local data=$WORK/data store=$WORK/store mib=$REMOTE_MIB
    if has_step push; then
        restic_push() {
            echo "== restic backup of $data ($1)" >&2
            rm -rf "$RESTIC_CACHE_DIR"
            restic_backup "restic-push-$1" "$data" "$T/sum.json" "$T/ops.json"
            # shellcheck disable=SC2046
            emit step=push engine=restic round="$1" mib="$mib" opts="$RESTIC_OPTS" seconds="$WALL" \
                summary=@"$T/sum.json" server_requests=@"$T/ops.json" \
                restic_packs="$(find "$BALE_S3_ROOT/$BALE_S3_BUCKET/restic-push-$1/data" -type f | wc -l)" \
                $(stored "restic-push-$1")
            drop_prefix "restic-push-$1"
        }
        local round
        for ((round = 1; round <= ROUNDS; round++)); do
            restic_push "$round"
            for ps in $PACK_SIZES; do
                for j in $JOBS; do
                    local p=push-$ps-j$j-r$round m
                    echo "== bale obj push, pack size $ps, $j jobs ($round)" >&2
                    # shellcheck disable=SC2046
                    "$BALE" obj remote add "$store" "$p" "$(s3url "$p")" $(where) >/dev/null
                    m=$(mark)
                    timed "$BALE" --json obj push "$store" "$p" --pack-size "$ps" --jobs "$j" >"$T/push.json"
                    ops_since "$m" "$T/ops.json"
                    # shellcheck disable=SC2046
                    emit step=push engine=bale round="$round" mib="$mib" pack_size="$ps" jobs="$j" seconds="$WALL" \
                        push=@"$T/push.json" server_requests=@"$T/ops.json" $(stored "$p")
                    [[ $p == "push-$READ_PACK-j4-r1" ]] && has_step read || drop_prefix "$p"
                done
            done
        done
        restic_push "$round"
    fi
    if has_step read; then
        local p=push-$READ_PACK-j4-r1
        [[ -d $BALE_S3_ROOT/$BALE_S3_BUCKET/$p ]] || {
            echo "read needs the push step's $p (STEPS has read but not push, or READ_PACK is not in PACK_SIZES)" >&2
            return 1
        }
        # shellcheck disable=SC2046
        lazy_reads s3s "$(s3url "$p")" $(where)
        drop_prefix "$p"
        echo "== push to a folder remote, for the reads without HTTP" >&2
        "$BALE" obj remote add "$store" folder "file://$WORK/folder-bucket" >/dev/null
        "$BALE" --json obj push "$store" folder --pack-size "$READ_PACK" --jobs 4 >/dev/null
        lazy_reads folder "file://$WORK/folder-bucket"
        rm -rf "$WORK/folder-bucket"
    fi
    rm -rf "$store" "$data"
    if has_step edit; then
        # bale's round and restic's one after the other, the edit undone in
        # between, so that only one copy of the file's versions is on disk.
        local src=$WORK/edit/src big=$WORK/edit/src/big.bin estore=$WORK/edit/store
        local size round m
        mkdir -p "$src"
        echo "== data: $REMOTE_BIG_MIB MiB in $big" >&2
        python3 bench/remote_data.py big "$big" "$REMOTE_BIG_MIB" 3
        size=$(stat -c %s "$big")
        rm -rf "$estore" "$RESTIC_CACHE_DIR"
        "$BALE" obj init "$estore" >/dev/null
        # shellcheck disable=SC2046
        "$BALE" obj remote add "$estore" edit "$(s3url edit)" $(where) >/dev/null
        for round in first second; do
            [[ $round == second ]] && edit_big
            echo "== edit, $round: bale obj add + push of $big" >&2
            timed "$BALE" --json obj add "$estore" "$big" >"$T/add.json"
            local add_wall=$WALL
            m=$(mark)
            timed "$BALE" --json obj push "$estore" edit >"$T/push.json"
            ops_since "$m" "$T/ops.json"
            local region=()
            [[ $round == second ]] && region=(edit=@"$T/edit.json")
            emit step=edit engine=bale round="$round" file_bytes="$size" percent="$EDIT_PERCENT" \
                add_seconds="$add_wall" seconds="$WALL" add=@"$T/add.json" push=@"$T/push.json" \
                server_requests=@"$T/ops.json" "${region[@]}"
        done
        drop_prefix edit
        rm -rf "$estore"
        python3 bench/remote_data.py restore "$big" "$EDIT_PERCENT" "$T/region.bin"
        for round in first second; do
            [[ $round == second ]] && edit_big
            echo "== edit, $round: restic backup of $src" >&2
            restic_backup restic-edit "$src" "$T/sum.json" "$T/ops.json"
            emit step=edit engine=restic round="$round" file_bytes="$size" percent="$EDIT_PERCENT" \
                opts="$RESTIC_OPTS" seconds="$WALL" summary=@"$T/sum.json" server_requests=@"$T/ops.json"
        done
        drop_prefix restic-edit
        rm -rf "$WORK/edit" "$RESTIC_CACHE_DIR"
    fi
}

# The same new bytes each time (seed 2), the old ones kept to undo it.
edit_big() {
    echo "== rewriting $EDIT_PERCENT % of $big" >&2
    python3 bench/remote_data.py edit "$big" "$EDIT_PERCENT" 2 "$T/region.bin" >"$T/edit.json"
}

on_moto() {
    T=$WORK/t
    mkdir -p "$T" "$WORK/commits"
    for w in $WRITERS; do
        echo "== bale bench remote-commits: $w writers, $COMMITS commits each (moto)" >&2
        local m
        m=$(mark)
        "$BALE" --json bench remote-commits "$(s3url "commits-w$w")" --endpoint "$BALE_S3_ENDPOINT" \
            --writers "$w" --commits "$COMMITS" --dir "$WORK/commits" >"$T/commits.json"
        ops_since "$m" "$T/ops.json"
        emit step=commits engine=bale writers="$w" commits_each="$COMMITS" result=@"$T/commits.json" \
            server_requests=@"$T/ops.json"
    done
}

case "${1:-}" in
    --on-s3s) on_s3s; exit ;;
    --on-moto) on_moto; exit ;;
    "") ;;
    *) echo "usage: $0 (settings in the environment; see the top of this script)" >&2; exit 2 ;;
esac

# ---- outside: check the tools, make the data, start the servers ----

[[ -x $BALE ]] || { echo "$BALE is missing: cargo build --release --locked -p bale-cli (or make bench-remote)" >&2; exit 1; }
command -v restic >/dev/null || { echo "restic is missing: apt-get install restic (or make bench-remote)" >&2; exit 1; }
if has_step push || has_step read || has_step edit; then
    "$S3S_FS" --version >/dev/null || { echo "s3s-fs ($S3S_FS) is missing: make s3s-fs-tool" >&2; exit 1; }
fi
if has_step commits; then
    "$S3_PYTHON" -c 'import moto' || { echo "$S3_PYTHON lacks moto: make .venv/.s3-deps" >&2; exit 1; }
fi
mkdir -p "$WORK/tmp" bench/results
WORK=$(cd "$WORK" && pwd)
# The data and the servers' buckets are large: removed however the run ends.
cleanup() { if [[ $KEEP != 1 ]]; then rm -rf "$WORK"; fi; }
trap cleanup EXIT
export COMMIT RUN
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo nogit)
RUN=$(date -u +%Y-%m-%dT%H:%M:%SZ)-$COMMIT
echo "== run $RUN into $OUT" >&2
emit step=settings host_cpus="$(nproc)" load_before="$(cut -d' ' -f1-3 /proc/loadavg)" \
    restic_version="$(restic version | cut -d' ' -f2)" s3s_fs_version="$("$S3S_FS" --version 2>/dev/null | cut -d' ' -f2 || true)" \
    remote_mib="$REMOTE_MIB" remote_small="$REMOTE_SMALL" pack_sizes="$PACK_SIZES" jobs="$JOBS" rounds="$ROUNDS" \
    restic_opts="$RESTIC_OPTS" read_pack="$READ_PACK" read_samples="$READ_SAMPLES" big_mib="$REMOTE_BIG_MIB" \
    edit_percent="$EDIT_PERCENT" writers="$WRITERS" commits="$COMMITS" steps="$STEPS"
started=$(date +%s)

if has_step push || has_step read; then
    echo "== data: $REMOTE_MIB MiB in $WORK/data" >&2
    python3 bench/remote_data.py tree "$WORK/data" "$REMOTE_MIB" "$REMOTE_SMALL" 1
    rm -rf "$WORK/store"
    "$BALE" obj init "$WORK/store" >/dev/null
    echo "== bale obj add of the tree" >&2
    timed "$BALE" --json obj add "$WORK/store" "$WORK/data" >"$WORK/add.json"
    emit step=add engine=bale mib="$REMOTE_MIB" seconds="$WALL" add=@"$WORK/add.json"
fi
if has_step push || has_step read || has_step edit; then
    RUST_LOG=s3s=debug TMPDIR=$WORK/tmp tests/s3/with-server.sh s3s -- "$SELF" --on-s3s
fi
if has_step commits; then
    TMPDIR=$WORK/tmp tests/s3/with-server.sh moto -- "$SELF" --on-moto
fi
emit step=done seconds="$(($(date +%s) - started))" load_after="$(cut -d' ' -f1-3 /proc/loadavg)"
echo "== raw results: $OUT (run $RUN)" >&2
python3 bench/remote_summary.py "$OUT" "$RUN"
