# The core built for Windows (x86_64-pc-windows-gnu, mingw-w64) and its
# test binaries run under Wine.
#
#   make test-windows   install what is missing, cross-build the core's and CLI's
#                       tests, run them under Wine
#   make lint-windows   clippy for the Windows build (part of `make lint`)
#   make wine-prefix    the Wine prefix only (target/wine)
#
# Installs when missing: Debian's mingw-w64 and wine, the Rust target.
# The prefix lives in the build folder (WINEPREFIX=<target>/wine), so a
# fresh clone starts clean; it gets a small bcryptprimitives.dll built here
# from tools/wine (Wine 8.0 lacks ProcessPrng, which Rust's std imports)
# and reports Windows 10 (Node >= 20 refuses Wine's default version).

WIN_TRIPLE := x86_64-pc-windows-gnu
WIN_TARGET_DIR := $(abspath $(or $(CARGO_TARGET_DIR),target))
WINEPREFIX := $(WIN_TARGET_DIR)/wine
WIN_SHIM := $(WIN_TARGET_DIR)/wine-shim/bcryptprimitives.dll
WIN_READY := $(WINEPREFIX)/.bale-ready
export WINEDEBUG := -all

.PHONY: test-windows lint-windows windows-tools windows-build-tools wine-prefix

lint: lint-windows

# The cross toolchain (linting and building), then Wine (running).
windows-build-tools:
	@command -v x86_64-w64-mingw32-gcc >/dev/null || \
		{ echo "installing mingw-w64 (apt, about a minute)"; \
		  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mingw-w64 >/dev/null; }
	@rustup target list --installed 2>/dev/null | grep -qx $(WIN_TRIPLE) || rustup target add $(WIN_TRIPLE)

windows-tools: windows-build-tools
	@command -v wine >/dev/null || \
		{ echo "installing wine (apt, about a minute)"; \
		  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wine >/dev/null; }

$(WIN_SHIM): tools/wine/bcryptprimitives.c tools/wine/bcryptprimitives.def | windows-tools
	@mkdir -p $(dir $@)
	x86_64-w64-mingw32-gcc -O2 -shared -o $@ tools/wine/bcryptprimitives.c tools/wine/bcryptprimitives.def -ladvapi32

# The first wine call creates the prefix (about 20 s). Each prefix has a
# wineserver of its own: make/node-windows.mk makes a second one, so that
# its suite and this one can run at the same time (make test runs them in
# different lanes) without one's `wineserver -k` ending the other.
%/.bale-ready: $(WIN_SHIM)
	@mkdir -p $*
	WINEPREFIX=$* wineboot -i >/dev/null 2>&1
	WINEPREFIX=$* wine winecfg -v win10 >/dev/null 2>&1
	cp $(WIN_SHIM) $*/drive_c/windows/system32/bcryptprimitives.dll
	WINEPREFIX=$* wineserver -w
	@touch $@

wine-prefix: $(WIN_READY)

lint-windows: windows-build-tools
	$(CARGO) clippy --target $(WIN_TRIPLE) -p bale -p bale-cli --all-targets --locked -- -D warnings

# The tests of the core and the CLI that exercise Windows code, as
# Windows binaries under Wine: the core's unit tests (its Windows file,
# lock and path code), every core test binary (core/tests/<area>) and the
# CLI's. Within them, each area's main.rs marks `#[cfg(not(windows))]`
# the modules of pure computation over the memory backend or a simulated
# folder, which give the same bytes on every platform and so run natively
# only: the tree store's model, crash images, durability, estimate,
# injected faults, hostile metas and pages, leaf fill, long keys, meta
# slots, range requests and torn metas; bitable crash images and the
# memory budget; the object store's crash images, damaged stores in a
# simulated folder and its regressions; the replayed fuzz findings; reads
# straight from a remote. The S3 binary needs its servers (test-remote-s3).
# What runs here: the file backend and its locks, every kill, lock and
# multi-process suite (core/tests/process), bad files read through the
# Windows file backend, the corpus, the object store and remotes on real
# folders, and the CLI.

# Doc tests run in the native build only. The core and the CLI build in
# one command, so the core is compiled once, with the CLI's features. One
# wineserver serves the whole run (-p: it stays until -k). Left to itself
# it exits a few seconds after each test binary; a binary once failed at
# its start with "wine client error:0: recvmsg: Connection reset by peer",
# most likely started while the server was exiting.
test-windows: $(WIN_READY)
	WINEPREFIX=$(WINEPREFIX) wineserver -p
	@status=0; WINEPREFIX=$(WINEPREFIX) CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER=wine \
		$(CARGO) test --target $(WIN_TRIPLE) --locked -p bale -p bale-cli --tests || status=$$?; \
	WINEPREFIX=$(WINEPREFIX) wineserver -k || true; exit $$status
