#!/usr/bin/env bash
# The bale demo: builds an asset catalogue of about 100,000 entries plus a few
# multi-megabyte blobs with the `bale` command line, then lists, inspects,
# checks, reads back and compacts it, exports it to a bitable and looks the
# same keys up in both files. Then an object store: an asset tree of
# a few thousand small files and three large ones goes in, a slightly changed
# copy goes in after it, and the store is packed, validated and asked what
# deduplication and compression saved; then it is pushed to an S3 bucket
# (moto's server on 127.0.0.1, or a folder when no server can be started),
# cloned lazily into a new store, and one large object is read there by
# range reads (scripts/demo-remote.sh). Everything happens in a temporary
# directory that is removed at the end (about 1.5 GB at its largest).
#
# Usage: scripts/demo.sh path/to/bale     (`make demo` builds it and runs this)
set -euo pipefail

if [[ $# -ne 1 ]]; then
    echo "usage: $0 path/to/bale" >&2
    exit 2
fi
BIN=$1
[[ $BIN == */* && $BIN != /* ]] && BIN="$PWD/$BIN"
if ! "$BIN" --version >/dev/null; then
    echo "demo: $1 is not a runnable bale binary" >&2
    exit 1
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/bale-demo.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
STORE="$WORK/catalogue.bale"
START=$SECONDS

say() { printf '\n==> %s\n' "$*"; }
size_of() { stat -c %s "$1"; }

N=100000
say "Generating a catalogue of $N assets (key<TAB>JSON metadata) with awk"
awk -v n="$N" 'BEGIN {
    srand(20240601)
    split("aurora basalt cinder delta ember fjord granite harbor", projects, " ")
    split("texture mesh audio shader anim font", kinds, " ")
    split("png ktx2 glb ogg wgsl anim ttf", exts, " ")
    split("alice bob carol dmitri eve farid", owners, " ")
    split("hero prop env ui fx lod0 lod1 draft final", tags, " ")
    for (i = 0; i < n; i++) {
        p = projects[1 + i % 8]
        k = 1 + int(rand() * 6)
        id = sprintf("%06d", i)
        sha = ""
        for (j = 0; j < 8; j++) sha = sha sprintf("%08x", int(rand() * 4294967295))
        size = int(1024 + rand() * rand() * 50000000)
        printf "asset/%s/%s/%s\t{\"name\":\"%s_%s.%s\",\"kind\":\"%s\",\"bytes\":%d,\"sha256\":\"%s\",\"owner\":\"%s\",\"tags\":[\"%s\",\"%s\"],\"created\":\"2024-%02d-%02dT%02d:%02d:00Z\",\"version\":%d}\n",
            p, kinds[k], id, kinds[k], id, exts[k], kinds[k], size, sha,
            owners[1 + int(rand() * 6)], tags[1 + int(rand() * 9)], tags[1 + int(rand() * 9)],
            1 + int(rand() * 12), 1 + int(rand() * 28), int(rand() * 24), int(rand() * 60),
            1 + int(rand() * 5)
    }
}' >"$WORK/catalogue.tsv"
echo "$(wc -l <"$WORK/catalogue.tsv") lines, $(size_of "$WORK/catalogue.tsv") bytes; the first one:"
head -n 1 "$WORK/catalogue.tsv"

say "Loading it into a new store in one transaction: bale kv load --create"
"$BIN" kv load "$STORE" --create <"$WORK/catalogue.tsv"

say "Making two big blobs: 8 MiB of compressible text and 4 MiB from /dev/urandom"
awk 'BEGIN {
    for (i = 0; i < 140000; i++)
        printf "%08d frame=%d layer=%s exposure=%.3f note=the quick brown fox jumps over the lazy dog\n",
            i, i % 240, (i % 3 ? "beauty" : "depth"), (i % 97) / 10
}' >"$WORK/render.log"
truncate -s 8M "$WORK/render.log"
head -c 4194304 /dev/urandom >"$WORK/noise.bin"

say "Streaming them in as values: bale kv put --file"
"$BIN" kv put "$STORE" blob/aurora/render.log --file "$WORK/render.log"
"$BIN" kv put "$STORE" blob/aurora/noise.bin --file "$WORK/noise.bin"
"$BIN" kv ls "$STORE" --prefix blob/ --long

say "The first 10 textures of project basalt: bale kv ls --prefix asset/basalt/texture/ --limit 10"
"$BIN" kv ls "$STORE" --prefix asset/basalt/texture/ --limit 10 | tee "$WORK/ls.out"
[[ $(wc -l <"$WORK/ls.out") -eq 10 ]] || { echo "demo: expected 10 keys" >&2; exit 1; }

say "Three of them with their metadata, newest id first: --reverse --values --limit 3"
"$BIN" kv ls "$STORE" --prefix asset/basalt/texture/ --reverse --values --limit 3

say "Counting the fonts of project cinder with --json"
"$BIN" --json kv ls "$STORE" --prefix asset/cinder/font/ >"$WORK/fonts.json"
grep -o '"count":[0-9]*' "$WORK/fonts.json"

FIRST=$(head -n 1 "$WORK/ls.out")
say "One asset's metadata: bale kv get $FIRST"
"$BIN" kv get "$STORE" "$FIRST"
echo

say "Reading 200 bytes at offset 5,000,000 of the 8 MiB log, touching only that block"
"$BIN" kv get "$STORE" blob/aurora/render.log --offset 5000000 --length 200 >"$WORK/range.out"
cat "$WORK/range.out"
echo
dd if="$WORK/render.log" iflag=skip_bytes,count_bytes skip=5000000 count=200 bs=64K status=none >"$WORK/range.want"
cmp "$WORK/range.out" "$WORK/range.want"
echo "(the same 200 bytes as in the source file)"

say "Reading the random blob back whole and comparing it with its source"
"$BIN" kv get "$STORE" blob/aurora/noise.bin >"$WORK/noise.out"
cmp "$WORK/noise.out" "$WORK/noise.bin"
echo "identical, $(size_of "$WORK/noise.out") bytes"

say "The store's shape: bale stat"
"$BIN" stat "$STORE"

say "Verifying every page: bale check"
"$BIN" check "$STORE"

say "Dropping project ember and the random blob, then compacting"
"$BIN" kv ls "$STORE" --prefix asset/ember/ >"$WORK/doomed.keys"
echo blob/aurora/noise.bin >>"$WORK/doomed.keys"
echo "removing $(wc -l <"$WORK/doomed.keys") keys (with xargs: a few processes, each one transaction)"
xargs -d '\n' -a "$WORK/doomed.keys" "$BIN" kv rm "$STORE"
"$BIN" compact "$STORE"
"$BIN" check "$STORE"

TABLE="$WORK/catalogue.bitable"
say "The catalogue as an immutable sorted table: bale bitable export"
"$BIN" bitable export "$STORE" "$TABLE"
"$BIN" bitable stat "$TABLE"
"$BIN" bitable check "$TABLE"

say "The same asset from both files, and the key at ordinal 1000 with its neighbours"
cmp <("$BIN" kv get "$STORE" "$FIRST") <("$BIN" bitable get "$TABLE" "$FIRST")
echo "$FIRST: identical in both"
"$BIN" bitable scan "$TABLE" --ordinal 999 --limit 3 --ranks

say "Looking the same 1,000,000 random keys up in both: bale bench lookup"
"$BIN" bench lookup "$STORE" "$TABLE"

say "The tree-store part took $((SECONDS - START)) s. Now an object store."
OBJ_START=$SECONDS
command -v python3 >/dev/null || { echo "demo: the object store part needs python3" >&2; exit 1; }
# The summary of a `bale --json obj add DIR` report.
added() {
    python3 -c '
import json, sys
r = json.load(sys.stdin)
print("added {:,} files ({:,.1f} MiB) from {} directories in {:.2f} s".format(
    r["files"], r["bytes"] / 2**20, r["dirs"], r["seconds"]))'
}

ASSETS="$WORK/assets-v1"
say "Generating an asset tree with python3: 2,880 JSON files, 48 identical licences, 3 large files"
python3 - "$ASSETS" <<'PY'
import json, os, random, sys
root = sys.argv[1]
rng = random.Random(20240601)
projects = "aurora basalt cinder delta ember fjord granite harbor".split()
kinds = "texture mesh audio shader anim font".split()
owners = "alice bob carol dmitri eve farid".split()
tags = "hero prop env ui fx lod0 lod1 draft final".split()
licence = b"Permission is hereby granted, free of charge, to use this asset in the project.\n" * 40
n = 0
for p in projects:
    for k in kinds:
        d = os.path.join(root, "meta", p, k)
        os.makedirs(d)
        for _ in range(60):
            meta = {
                "name": f"{k}_{n:05d}", "project": p, "kind": k, "owner": rng.choice(owners),
                "bytes": rng.randrange(1024, 50_000_000), "tags": rng.sample(tags, 3),
                "history": [{"rev": r, "by": rng.choice(owners), "note": "tweaked " + rng.choice(kinds)}
                            for r in range(rng.randrange(1, 30))],
            }
            with open(os.path.join(d, f"{n:05d}.json"), "w") as f:
                json.dump(meta, f, indent=2)
            n += 1
        with open(os.path.join(d, "LICENSE.txt"), "wb") as f:
            f.write(licence)

# Large files, 1 MiB blocks: random ones (incompressible) and text ones, each
# text block stamped every 4 KiB with its number so that no two are alike.
line = b"frame=%06d layer=beauty exposure=1.250 sampler=bluenoise note=the quick brown fox\n"
text = bytes(b"".join(line % i for i in range(13000))[: 1 << 20])
for name, mib, random_share in [("render.cache", 200, 0.5), ("render.log", 120, 0.05), ("footage.bin", 100, 1.0)]:
    with open(os.path.join(root, name), "wb") as f:
        for b in range(mib):
            if rng.random() < random_share:
                f.write(os.urandom(1 << 20))
            else:
                block = bytearray(text)
                for off in range(0, 1 << 20, 4096):
                    block[off:off + 8] = b"%08d" % b
                f.write(block)
PY
echo "$(find "$ASSETS" -type f | wc -l) files, $(du -sh "$ASSETS" | cut -f1) in $ASSETS"

OBJS="$WORK/objects"
say "A new object store: bale obj init"
"$BIN" obj init "$OBJS"

say "Adding the tree, recording path -> id in a tree store: bale obj add --paths"
"$BIN" --json obj add "$OBJS" "$ASSETS" --paths "$WORK/paths-v1.bale" >"$WORK/add1.json"
"$BIN" --json obj stat "$OBJS" >"$WORK/stat1.json"
added <"$WORK/add1.json"
"$BIN" obj stat "$OBJS"

say "Version 2: a copy with three JSON files edited and 1 MiB rewritten in the middle of render.cache"
ASSETS2="$WORK/assets-v2"
cp -r "$ASSETS" "$ASSETS2"
for f in meta/aurora/texture/00000.json meta/cinder/shader/00900.json meta/harbor/font/02879.json; do
    sed -i 's/"owner": "[a-z]*"/"owner": "gwen"/' "$ASSETS2/$f"
done
dd if=/dev/urandom of="$ASSETS2/render.cache" bs=1M count=1 seek=100 conv=notrunc status=none

say "Adding version 2 the same way"
"$BIN" --json obj add "$OBJS" "$ASSETS2" --paths "$WORK/paths-v2.bale" >"$WORK/add2.json"
"$BIN" --json obj stat "$OBJS" >"$WORK/stat2.json"
added <"$WORK/add2.json"

say "Packing the staging files into a pack, then rehashing everything: bale obj pack, bale obj validate"
"$BIN" obj pack "$OBJS"
"$BIN" obj validate "$OBJS"

say "Reading version 2 of render.cache back by its path, and comparing"
ID=$("$BIN" kv get "$WORK/paths-v2.bale" render.cache | od -An -v -tx1 | tr -d ' \n')
"$BIN" obj stat "$OBJS" "$ID"
"$BIN" obj get "$OBJS" "$ID" -o "$WORK/render.cache.out"
cmp "$WORK/render.cache.out" "$ASSETS2/render.cache"
echo "identical, $(size_of "$WORK/render.cache.out") bytes"
rm "$WORK/render.cache.out"

say "What deduplication and compression saved (from bale obj stat --json)"
"$BIN" --json obj stat "$OBJS" >"$WORK/stat3.json"
python3 - "$WORK" <<'PY'
import json, os, sys
w = sys.argv[1]
load = lambda name: json.load(open(os.path.join(w, name)))
add1, add2, s1, s2, s3 = (load(n) for n in ["add1.json", "add2.json", "stat1.json", "stat2.json", "stat3.json"])
mib = lambda n: f"{n / 2**20:,.1f} MiB"
given = add1["bytes"] + add2["bytes"]
print(f"version 1: {add1['files']:,} files, {mib(add1['bytes'])}; stored as {s1['objects']:,} distinct objects")
print(f"           whose records take {mib(s1['stored_bytes'])}: compression (and the licence stored once)")
print(f"           saved {mib(add1['bytes'] - s1['stored_bytes'])}")
print(f"version 2: {add2['files']:,} files, {mib(add2['bytes'])}; {s2['objects'] - s1['objects']} new objects holding "
      f"{mib(s2['logical_bytes'] - s1['logical_bytes'])},")
print(f"           but the records grew by only {mib(s2['stored_bytes'] - s1['stored_bytes'])}: the chunks were there already")
print(f"in all:    {mib(given)} added, {mib(s3['stored_bytes'])} of records, {mib(s3['disk_bytes'])} on disk in "
      f"{s3['disk_files']} files ({given / s3['disk_bytes']:.1f}x less)")
PY

say "Remotes: the store in an S3 bucket, a lazy clone, one object read"
HERE=$(cd "$(dirname "$0")/.." && pwd)
if [[ -n ${DEMO_S3_PYTHON:-} ]] && "$DEMO_S3_PYTHON" -c 'import moto' 2>/dev/null; then
    S3_PYTHON=$DEMO_S3_PYTHON "$HERE/tests/s3/with-server.sh" moto -- "$HERE/scripts/demo-remote.sh" "$BIN" "$OBJS" "$ID" "$WORK"
else
    "$HERE/scripts/demo-remote.sh" "$BIN" "$OBJS" "$ID" "$WORK"
fi

say "The object store part took $((SECONDS - OBJ_START)) s; done in $((SECONDS - START)) s. Try \`$1 bench kv\` for a quick benchmark."
