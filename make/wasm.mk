# The WebAssembly package (bindings/wasm): tree-store files read lazily from a
# File/Blob or bytes, writable stores in memory, and object stores and
# bitables read-only from their files, for the browser and Node, generated
# with their .d.ts into bindings/wasm/pkg (not committed) by wasm-bindgen
# from one build: pkg/ (--target web: browsers, bundlers, Node's import
# through js/node.js), pkg/node/ (--target nodejs: Node's require) and
# pkg/bundler/ (--target bundler: bundlers that import .wasm as a module).
# The package's exports map says which serves which condition.
#
#   make test-wasm       install what is missing, build the module, write
#                        the remote fixture, run the Node suite and the
#                        headless-Chromium suite
#   make lint-wasm       clippy for the wasm32 build (part of `make lint`)
#   make wasm-pkg        build bindings/wasm/pkg only
#   make wasm-inspector  build, then serve the inspector on 127.0.0.1
#                        (bale inspect; FILE=path opens a store)
#
# Installs when missing: the wasm32 target, the wasm-bindgen CLI of the
# version Cargo.lock pins, Debian's chromium, and playwright-core (the
# workspace's npm install, make/npm.mk).
# Nothing is skipped: a missing browser or corpus fails the run.

TEST_SETUP += wasm-target chromium

WASM_DIR := bindings/wasm
WASM_PKG := $(WASM_DIR)/pkg
WASM_TARGET_DIR := $(or $(CARGO_TARGET_DIR),target)
WASM_ARTIFACT := $(WASM_TARGET_DIR)/wasm32-unknown-unknown/release/bale_wasm.wasm
WASM_BINDGEN_VERSION = $(shell grep -A1 '^name = "wasm-bindgen"$$' Cargo.lock | sed -n 's/^version = "\(.*\)"/\1/p')

.PHONY: chromium test-wasm wasm-cli wasm-pkg wasm-tools wasm-target wasm-inspector lint-wasm wasm-remote-fixture

wasm-target:
	@rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown || rustup target add wasm32-unknown-unknown

# The host's clippy run never sees what is compiled for wasm32 only (nor
# the core as the wasm build has it).
lint: lint-wasm
lint-wasm: wasm-target
	$(CARGO) clippy --target wasm32-unknown-unknown -p bale-wasm --all-targets --locked -- -D warnings

# The wasm-bindgen CLI goes into the tools cache (see Makefile), not the
# user's ~/.cargo/bin. Built unoptimised (--debug): that compiles in half
# the CPU time of a release build (about 110 s against 250 s here), and it
# writes the same files, in about a second each instead of a quarter.
WASM_BINDGEN_ROOT = $(TOOLS_DIR)/wasm-bindgen-$(WASM_BINDGEN_VERSION)-debug
WASM_BINDGEN = $(WASM_BINDGEN_ROOT)/bin/wasm-bindgen
wasm-tools: wasm-target
	@command -v node >/dev/null || { echo "node is missing: install Node.js >= 20"; exit 1; }
	$(call TOOL,$(WASM_BINDGEN),wasm-bindgen $(WASM_BINDGEN_VERSION),wasm-bindgen-cli --version $(WASM_BINDGEN_VERSION) --locked --debug --no-default-features --root $(WASM_BINDGEN_ROOT))

chromium:
	@command -v chromium >/dev/null || (apt-get update && apt-get install -y chromium)

wasm-pkg: wasm-tools
	$(CARGO) build -p bale-wasm --target wasm32-unknown-unknown --release --locked
	$(WASM_BINDGEN) --target web --out-dir $(WASM_PKG) $(WASM_ARTIFACT)
	$(WASM_BINDGEN) --target bundler --out-dir $(WASM_PKG)/bundler $(WASM_ARTIFACT)
	$(WASM_BINDGEN) --target nodejs --out-dir $(WASM_PKG)/node $(WASM_ARTIFACT)
	@# CommonJS inside a "type": "module" package.
	echo '{ "type": "commonjs" }' > $(WASM_PKG)/node/package.json

# The suites are the root package.json's test:wasm (tests/wasm and the
# headless-Chromium one); playwright-core downloads no browser.
test-wasm: wasm-pkg npm-deps wasm-remote-fixture wasm-cli chromium
	REMOTE_FIXTURE=$(abspath $(REMOTE_FIXTURE)) BALE_INSPECTOR_CLI=$(abspath $(WASM_CLI)) npm run --silent test:wasm

# The CLI the suites run (tests/wasm/cli.mjs), with the inspector embedded,
# in a target folder of its own: make test builds the CLI with other
# features at the same time (test-posix-locks), which would replace the
# binary under the suites' feet in the shared one. Its intermediate files
# go where the other builds' do (the cache's build folder, or else the
# shared target folder), so it compiles the CLI alone. The test profile
# (opt-level 1), as the Rust suites have it: it writes the ~4.5 GiB store of
# the Chromium suite, which takes minutes unoptimised.
WASM_CLI_TARGET := $(WASM_TARGET_DIR)/inspector-cli
WASM_CLI := $(WASM_CLI_TARGET)/$(HOST_TRIPLE)/debug/bale
wasm-cli: wasm-pkg
	CARGO_TARGET_DIR=$(WASM_CLI_TARGET) CARGO_BUILD_BUILD_DIR=$(or $(CARGO_BUILD_BUILD_DIR),$(abspath $(WASM_TARGET_DIR))) $(CARGO) build --locked --profile test --target $(HOST_TRIPLE) -p bale-cli --features inspector

# Remotes as folders, served over HTTP to tests/wasm/remote.test.mjs and
# the Chromium suite, with an expected.json of their own. Written afresh
# each run, the same bytes every time (the remote's id and the writers'
# nonces come from fixed seeds); its remote/ is the golden corpus's
# tests/corpus/remote/v1/remote-blake3, which both suites also read.
REMOTE_FIXTURE := $(WASM_TARGET_DIR)/remote-fixture
wasm-remote-fixture: corpus-tool
	rm -rf $(REMOTE_FIXTURE)
	$(CORPUS_TOOL) remote-fixture $(REMOTE_FIXTURE)

# `bale inspect` with the page embedded; FILE=path opens a store in it.
wasm-inspector: wasm-pkg
	$(CARGO) run --locked -q -p bale-cli --features inspector -- inspect $(FILE)
