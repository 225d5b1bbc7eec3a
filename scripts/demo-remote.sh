#!/usr/bin/env bash
# The demo's remote step: pushes an object store to a bucket, clones it
# lazily into a new store, fetches one large object by range reads and
# prints the requests and bytes each step moved.
#
# Usage: scripts/demo-remote.sh path/to/bale STORE OBJECT_ID WORKDIR
# With BALE_S3_ENDPOINT and BALE_S3_BUCKET set (tests/s3/with-server.sh
# sets them and dummy credentials), the bucket is that S3 server's;
# otherwise a folder under WORKDIR stands in for it (file://).
set -euo pipefail

[[ $# -eq 4 ]] || { echo "usage: $0 path/to/bale STORE OBJECT_ID WORKDIR" >&2; exit 2; }
BIN=$1 OBJS=$2 ID=$3 WORK=$4
say() { printf '\n==> %s\n' "$*"; }

if [[ -n ${BALE_S3_ENDPOINT:-} ]]; then
    URL="s3://$BALE_S3_BUCKET/demo"
    WHERE=(--endpoint "$BALE_S3_ENDPOINT" --path-style)
    echo "an S3 server (${BALE_S3_SERVER:-s3}) at $BALE_S3_ENDPOINT, bucket $BALE_S3_BUCKET"
else
    URL="file://$WORK/bucket"
    WHERE=()
    echo "no S3 server could be started: a folder stands in for the bucket ($URL)"
fi

say "Adding the remote (the server's conditional writes are checked first): bale obj remote add"
"$BIN" obj remote add "$OBJS" origin "$URL" "${WHERE[@]}"

say "Pushing the store: bale obj push"
"$BIN" --json obj push "$OBJS" origin >"$WORK/push.json"

say "A second machine: a new store, a lazy clone (manifest and pack indexes only): bale obj pull --lazy"
CLONE="$WORK/clone"
"$BIN" obj init "$CLONE" >/dev/null
"$BIN" obj remote add "$CLONE" origin "$URL" "${WHERE[@]}" >/dev/null
"$BIN" --json obj pull "$CLONE" origin --lazy >"$WORK/lazy.json"

say "Reading one large object there: bale obj fetch (range reads), then bale obj get"
"$BIN" --json obj fetch "$CLONE" origin "$ID" >"$WORK/fetch.json"
"$BIN" obj get "$CLONE" "$ID" -o "$WORK/fetched.out"
"$BIN" obj get "$OBJS" "$ID" | cmp - "$WORK/fetched.out"
echo "identical to the original, $(stat -c %s "$WORK/fetched.out") bytes"

say "Requests and bytes moved"
python3 - "$WORK" <<'PY'
import json, os, sys
w = sys.argv[1]
load = lambda n: json.load(open(os.path.join(w, n)))
push, lazy, fetch = load("push.json"), load("lazy.json"), load("fetch.json")
mib = lambda n: f"{n / 2**20:,.1f} MiB"
t = push["traffic"]
print(f"push:       {push['objects_sent']:,} objects in {len(push['packs'])} packs, {mib(t['bytes_sent'])} sent "
      f"in {t['requests']} requests, {push['seconds']:.1f} s (generation {push['generation']})")
t = lazy["traffic"]
print(f"lazy clone: {lazy['objects']:,} objects known after {t['requests']} requests and {mib(t['bytes_received'])} received")
t = fetch["traffic"]
print(f"one object: {fetch['records_fetched']:,} records in {fetch['reads']} range reads, {mib(t['bytes_received'])} "
      f"received in {t['requests']} requests, {fetch['seconds']:.2f} s")
share = t["bytes_received"] / max(1, push["traffic"]["bytes_sent"])
print(f"            {share:.0%} of what was pushed: the clone holds only what it read")
PY
