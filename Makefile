# The README's two commands, and their parts.
#
# Benchmarks (not part of `make test`; results and how to read them in
# bench/RESULTS.md): `make bench` runs them all, and one at a time
#   make bench-objects    the object store against disk-objectstore and git
#   make bench-bitable    bitables against LMDB
#   make bench-percall    per-call reads from Rust, Python and Node
#   make bench-inspector  the browser inspector (bindings/wasm/www) in
#                         headless chromium: open, paging and memory on a
#                         ~4 GiB tree store of 1,000,000 keys and a ~4 GiB
#                         object store (written once into bench/work/inspector)
#   make bench-remote     remotes on local S3 servers against restic: push,
#                         lazy reads, a 1 % edit of a large file, racing
#                         commits
SHELL := /bin/bash
CARGO ?= cargo

# A CI run builds each crate once, so incremental caches would only fill
# the disk (gigabytes across the native, Windows and feature builds).
ifeq ($(CI),true)
export CARGO_INCREMENTAL := 0
endif

# A cache outside the clone, shared by the clones of this machine, so that
# a new clone does not build again what it cannot change:
#   - cargo's intermediate build files (CARGO_BUILD_BUILD_DIR; the final
#     binaries stay in the clone's build folder). Cargo keys each artefact
#     of a dependency by package, version, features, profile, target and
#     compiler. The project's own crates it judges by their files' times
#     alone, which a clone made after another's build would pass, so
#     BALE_BUILD_KEY (scripts/build-key.sh: the hash of the sources' tree
#     when the clone is clean, else the clone's path) goes with them, and
#     core/build.rs makes the core, and every crate above it, build again
#     when it changes. Computed once per `make test`, for all its stages;
#   - the tools the suites install (s3s-fs, wasm-bindgen), by version.
# `make clean-cache` removes it; BALE_CACHE= (empty) keeps everything in the
# build folder.
BALE_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/bale
ifneq ($(BALE_CACHE),)
export CARGO_BUILD_BUILD_DIR ?= $(BALE_CACHE)/cargo-build
export BALE_BUILD_KEY ?= $(shell scripts/build-key.sh)
TOOLS_DIR := $(BALE_CACHE)/tools
else
TOOLS_DIR := $(abspath $(or $(CARGO_TARGET_DIR),target))/tools
endif

# `make test` lints as it builds: each cargo command it runs passes the
# project's own crates through clippy-driver (cargo's
# RUSTC_WORKSPACE_WRAPPER, with `make lint`'s arguments in CLIPPY_ARGS), so
# that every configuration it builds (the host's tests, POSIX locks, S3,
# Windows, wasm32, the Node addons, the wheel) is linted by the compile
# that builds it, at no compile of its own. Its lint stage is then rustfmt
# alone (fmt). `make lint` stays the check a change is made against,
# without building anything; a build sees a little more than its check
# (lints that look into dependencies' compiled code, box_default once), so
# make test may find what make lint passed.
ifeq ($(BALE_LINT_BUILDS),1)
export RUSTC_WORKSPACE_WRAPPER := clippy-driver
export CLIPPY_ARGS := -D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__
endif
# make test's host builds name the host's triple (cargo --target, through
# CARGO_BUILD_TARGET), as napi and maturin do: cargo keeps a target named
# apart from the one it builds for by default, so without it the Node
# addon and the sdist (both built with the test profile there) would
# compile every dependency again beside the Rust suites'.
HOST_TRIPLE := $(shell rustc -vV 2>/dev/null | sed -n 's/^host: //p')

# The tools cargo installs are not the project's: their crates are not
# linted (an install makes them the members of a workspace of their own),
# and they build in a folder of their own: in the shared one, their
# dependencies (built with the tool's release profile, not ours) would
# replace the project's, which then build again.
CARGO_TOOL_INSTALL = env -u RUSTC_WORKSPACE_WRAPPER -u CLIPPY_ARGS -u CARGO_BUILD_BUILD_DIR -u CARGO_BUILD_TARGET $(CARGO) install
# $(call TOOL,binary,its --version line,cargo install arguments): installs
# the tool when the binary is missing or says another version.
TOOL = @if [ "$$($(1) --version 2>/dev/null)" != "$(2)" ]; then \
	echo "installing $(2) (cargo install $(3))"; $(CARGO_TOOL_INSTALL) $(3); fi

# Each make/*.mk adds what it installs to TEST_SETUP (see `test`).
TEST_SETUP :=
include $(wildcard make/*.mk)

.PHONY: clean-cache demo pin-times setup test test-long test-rust test-posix-locks check-macos macos-targets fmt lint corpus-check corpus crash-long bench bench-percall bench-objects bench-bitable bench-inspector bench-remote deps

deps:
	@command -v cargo >/dev/null || { echo "cargo is missing: install rustup (https://rustup.rs)"; exit 1; }
	@rustup component list --installed 2>/dev/null | grep -q clippy || rustup component add clippy rustfmt

# The remote step uses moto's S3 server from .venv (make/remote.mk); if it
# cannot be installed, the demo says so and uses a folder as the bucket.
demo: deps
	$(CARGO) build --release --locked -p bale-cli
	@$(MAKE) -s $(PY_VENV)/.s3-deps >/dev/null 2>&1 || echo "demo: moto could not be installed; the remote step will use a folder"
	DEMO_S3_PYTHON=$(abspath $(PY_VENV))/bin/python ./scripts/demo.sh $${CARGO_TARGET_DIR:-target}/release/bale

# The seed of the sampled sweeps (core/tests/support/sample.rs): taken
# from the commit, so that each commit tries other cases; set it to replay
# a run's cases.
export BALE_TEST_SEED ?= $(shell git rev-parse --short=16 HEAD 2>/dev/null)

# Every suite as a stage, then a table of the seconds each took
# (scripts/stages.sh). First, one after the other, setup (everything the
# suites install on the machine: apt packages, Rust targets, the npm and
# Python installs, so that no two stages ever install the same thing at
# once) and fmt. Then two lanes side by side, each its stages in order:
# much of a stage is a single process (a compile's last crates, a suite
# under Wine, pytest), so two keep the machine's cores busier than one.
# What may run side by side is set by what the stages share:
#   - every build of the suites but three uses the test profile (the
#     Rust suites, POSIX locks, the corpus tool, the Windows tests, the
#     Node addons for Linux and Windows, the S3 suite, the inspector's
#     CLI; the sdist the dev profile, whose dependencies are the same),
#     so that they share the compiled dependencies: the first to need
#     one compiles it, for all. The three are the zig-linked wheel (a
#     build folder of its own, make/python.mk), wasm32 and the tools
#     cargo installs;
#   - cargo locks a build folder per profile and target (and a cross
#     build also the host's, for build scripts) while it compiles, so a
#     stage that builds while the other lane compiles waits for it; the
#     hosts lane starts with the wheel and wasm32, which wait for no one.
#     Cargo locks the target folder's host part too, which a build folder
#     of their own for the cross builds does not free: a Windows compile
#     still holds up the other lane's host builds. The order here is the
#     fastest of those measured (README);
#   - .venv (Python, the S3 servers' moto), node_modules and the npm
#     builds are the hosts lane's alone;
#   - each Wine suite has a Wine prefix of its own (make/windows.mk).
# The Rust lane is the longer one, so the clippy check for macOS (a
# cross build, holding the host part's lock only briefly) ends the hosts
# lane, whose last stage runs under Wine and compiles nothing.
LANE_RUST = test-rust corpus-check test-posix-locks test-windows
LANE_HOSTS = test-python test-wasm test-node test-wheels test-remote-s3 test-node-windows check-macos
# The suites' temporary files (std::env::temp_dir, pytest's tmp_path,
# Node's os.tmpdir) go to a folder of the checkout, emptied when make test
# starts and removed when it passes, so that no run leaves files behind
# in the system's temporary folder; a failed run's stay for a look.
TEST_TMP := $(CURDIR)/target/test-tmp
test:
	@echo "sampled sweeps: BALE_TEST_SEED=$(BALE_TEST_SEED) (set it to replay them; make test-long runs the long sweeps)"
	@rm -rf $(TEST_TMP) && mkdir -p $(TEST_TMP)
	@TMPDIR=$(TEST_TMP) BALE_LINT_BUILDS=1 CARGO_BUILD_TARGET=$(HOST_TRIPLE) scripts/stages.sh "$(MAKE)" setup fmt -- $(LANE_RUST) -- $(LANE_HOSTS)
	@rm -rf $(TEST_TMP)

# Under CI=true (a fresh clone) with the cache, the tracked files' times are
# set back (scripts/build-key.sh --pin) before anything builds, so that the
# clone takes what an earlier clone of the same tree built; the key, not
# the times, then says whether a build fits.
ifeq ($(CI)$(if $(BALE_CACHE),y),truey)
TEST_SETUP += pin-times
endif
pin-times:
	scripts/build-key.sh --pin

# The long forms of the sampled sweeps: each bad-file sweep cuts every
# table and store at every length on every backend and flips every bit of
# the tree stores and the small tables, and of larger tables every bit of
# each page's header and trailer plus tens of thousands of others
# (core/tests/bitable/badfiles.rs, `flips`); a release build, as the cases
# number in the millions. Then crash-long. tests/README.md has the time.
test-long:
	BALE_TEST_LONG=1 $(CARGO) test --release --locked -p bale --test tree --test bitable -- badfiles:: --nocapture
	$(MAKE) crash-long

# Regenerates the current-version corpus in memory and fails on any byte of
# drift. The corpus tool is built with the test profile and the selection
# of packages the Rust suites have, so that cargo gives the core and its
# dependencies the same features as in the other builds of the CLI (the
# inspector's), and compiles the tool alone.
CORPUS_TOOL = $(or $(CARGO_TARGET_DIR),target)/$(HOST_TRIPLE)/debug/bale-corpus
.PHONY: corpus-tool
corpus-tool:
	$(CARGO) build $(RUST_TESTED) --locked -q --profile test --target $(HOST_TRIPLE) --bin bale-corpus

corpus-check: corpus-tool
	$(CORPUS_TOOL) check tests/corpus

# Rewrites the current-version corpus (commit the result).
corpus: corpus-tool
	$(CORPUS_TOOL) generate tests/corpus

clean-cache:
	$(if $(BALE_CACHE),rm -rf $(BALE_CACHE))

fmt:
	$(CARGO) fmt --all --check

# bale-wasm is built for wasm32 only, and linted there (lint-wasm).
lint: fmt
	$(CARGO) clippy --workspace --exclude bale-wasm --all-targets --test s3 --locked -- -D warnings

# The binding crates have no Rust tests of their own; their host suites
# build them (see make/*.mk). test-remote-s3 builds its binary with the
# same selection, so that it reuses this build.
RUST_TESTED := --workspace --exclude bale-python --exclude bale-node --exclude bale-wasm
test-rust:
	$(CARGO) test $(RUST_TESTED) --locked

# The POSIX fcntl locks and per-process table of Unix systems without OFD
# locks (macOS, the BSDs; core/src/io/locks/posix.rs), on Linux through the
# core's posix-locks feature: every suite that locks across handles,
# threads or processes, and the CLI's lock tests (they run the CLI binary,
# built with the same feature).
# The whole `process` binary, and the modules of other binaries that lock
# across handles or threads (a filter picks the tests whose names hold it).
# All four with test-rust's selection of packages, which gives every
# dependency the features it has there (cargo unifies them over the
# packages selected): only the core and what is above it compile again.
POSIX_TEST = $(CARGO) test $(RUST_TESTED) --locked --features bale/posix-locks
test-posix-locks:
	$(POSIX_TEST) --lib --test process
	$(POSIX_TEST) --test tree -- file::
	$(POSIX_TEST) --test objects -- handles:: threads:: pack::
	$(POSIX_TEST) --test cli -- lock

# The core and the CLI, with their tests, must build and be clippy-clean
# for macOS. There is no Apple linker or C compiler here, so this checks
# without linking, and the C parts of dependencies (blake3's SIMD code,
# the bundled SQLite) are stood in for by `true`: only the Rust is checked.
# One target: the project's code differs between the two macOS targets
# only where it differs by processor (a prefetch on x86-64), and each of
# those paths is checked already, by the x86-64 builds for Linux and
# Windows and by this arm64 one. MACOS_TARGETS="aarch64-apple-darwin
# x86_64-apple-darwin" checks both.
MACOS_TARGETS ?= aarch64-apple-darwin
TEST_SETUP += macos-targets
macos-targets: deps
	@have="$$(rustup target list --installed)"; for t in $(MACOS_TARGETS); do \
		echo "$$have" | grep -qx "$$t" || rustup target add "$$t" || exit 1; done

check-macos: macos-targets
	@for t in $(MACOS_TARGETS); do u=$$(echo $$t | tr - _); \
		echo "clippy --target $$t"; \
		env CC_$$u=true AR_$$u=true $(CARGO) clippy --locked -q -p bale -p bale-cli --all-targets --target $$t -- -D warnings || exit 1; \
	done

crash-long:
	BALE_CRASH_IMAGES=100000 $(CARGO) test --release --locked -p bale --test tree -- crash:: --nocapture
	BALE_OBJ_CRASH_IMAGES=30000 $(CARGO) test --release --locked -p bale --test objects -- crash:: --nocapture
	BALE_BITABLE_CRASH_DRAWS=300 $(CARGO) test --release --locked -p bale --test bitable -- crash:: --nocapture

bench:
	./bench/run.sh
	$(MAKE) bench-objects
	$(MAKE) bench-bitable
	$(MAKE) bench-inspector
	$(MAKE) bench-remote

# The browser inspector in Debian's headless chromium (playwright-core):
# opening a ~4 GiB tree store of 1,000,000 keys picked as a file and by
# ?url= over a 127.0.0.1 range server, 200 Next pages and 200 seeks, the
# browser's memory (PSS) beside the corpus's 2,000-key store, and a ~4 GiB
# object store picked as a folder and by ?url= (bench/inspector/run.mjs).
# Beside it the peer, sql.js (npm, a dev dependency of bindings/wasm), which
# reads the whole file into memory: a SQLite database of the same small
# pairs opened, paged and sought the same way, and one of just over 2 GiB
# that it cannot open; then the bale / sql.js ratios. The stores are written
# once into bench/work/inspector (about 10.3 GiB, in about a minute; the
# large SQLite one by python3's sqlite3).
# Settings: INSPECTOR_GIB, SQLJS_GIB, OPENS, PAGES, SEEKS, CASES. Results
# are appended to bench/results/inspector-<date>.jsonl.
bench-inspector: wasm-pkg npm-deps chromium
	$(CARGO) build --release --locked -p bale-cli
	node bench/inspector/run.mjs

# Bitables against LMDB (heed): build, lookups, scan, merge, unsorted build
# (bench/bitable.sh; settings there).
bench-bitable: python-install node-build
	@$(PY) -c 'import lmdb' 2>/dev/null || $(PY) -m pip install -q --disable-pip-version-check lmdb
	./bench/bitable.sh

# Per-call reads (a snapshot per get) from Rust, Python and Node, small and
# large store, and the ratio table (bench/percall.sh; stores cached in
# bench/work/percall). Settings: RUNS, PASSES, PERCALL_GIB.
# The object store against disk-objectstore (installed from PyPI into
# .venv here) and git (bench/objects.sh; settings there).
bench-objects: python-install
	@$(PY) -c 'import disk_objectstore' 2>/dev/null || $(PY) -m pip install -q --disable-pip-version-check disk-objectstore
	./bench/objects.sh

# Remotes in S3 buckets against restic (Debian's package, apt-get installed
# when missing), on local servers started by tests/s3/with-server.sh:
# push of a ~1 GiB tree of mixed files by pack size and jobs beside restic
# backup of it, cold and warm reads of a lazy clone, the bytes a second
# push sends after a 1 % edit of a 2 GiB file beside restic's data_added
# (all on s3s-fs), and commits/s of 1-8 writers racing on one manifest (on
# moto). bench/remote.sh; settings there (REMOTE_MIB, REMOTE_BIG_MIB, ...).
# About 6 minutes here, up to ~6 GiB in bench/work/remote (removed at the
# end). Results are appended to bench/results/remote-<date>.jsonl. An
# s3s-fs built elsewhere can stand in: make bench-remote S3S_FS=path/to/s3s-fs.
bench-remote: $(PY_VENV)/.s3-deps s3s-fs-tool
	@command -v restic >/dev/null || { apt-get update -q && apt-get install -y -q restic; }
	$(CARGO) build --release --locked -p bale-cli
	S3_PYTHON=$(abspath $(PY)) S3S_FS=$(abspath $(S3S_FS)) ./bench/remote.sh

bench-percall: python-install node-build
	@$(PY) -c 'import lmdb' 2>/dev/null || $(PY) -m pip install -q --disable-pip-version-check lmdb
	./bench/run.sh percall

# Last, when every part above and in make/*.mk has added to TEST_SETUP
# (make reads a rule's prerequisites where the rule stands).
setup: deps $(TEST_SETUP)
