#!/usr/bin/env bash
# Prints the key of this checkout's build in the build cache that clones
# share (Makefile, BALE_CACHE; core/build.rs makes every crate of the
# workspace build again when it changes):
#   tree <hash>   the work tree is clean: the hash of the commit's tree
#                 names every byte of the sources, so clones at the same
#                 tree may take each other's build;
#   clone <path>  anything else (changes, untracked files, no git): only
#                 this checkout's own build, judged by cargo by its files'
#                 times as usual.
#
#   scripts/build-key.sh [--pin]
#
# --pin (make test under CI=true) also sets the time of every tracked file
# to 2000-01-01 when the tree is clean, so that cargo, which judges the
# project's own files by their times, takes the build another clone of the
# same tree left: the key, not the times, then says whether it fits. A file
# changed afterwards gets a new time, and changes the key.
set -euo pipefail
cd "$(dirname "$0")/.."
if git rev-parse -q --verify HEAD >/dev/null 2>&1 &&
	[ -z "$(git status --porcelain --untracked-files=normal 2>/dev/null)" ]; then
	if [ "${1:-}" = --pin ]; then
		git ls-files -z | xargs -0 touch -c -h -d @946684800
	fi
	echo "tree $(git rev-parse 'HEAD^{tree}')"
else
	echo "clone $PWD"
fi
