#!/usr/bin/env bash
# The bale demo: builds an asset catalogue of about 100,000 entries plus a few
# multi-megabyte blobs with the `bale` command line, then lists, inspects,
# checks, reads back and compacts it. Everything happens in a temporary
# directory that is removed at the end.
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

say "Done in $((SECONDS - START)) s. Try \`$1 bench kv\` for a quick benchmark."
