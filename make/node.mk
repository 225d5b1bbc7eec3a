# The Node package (bindings/node): the workspace's npm install (make/npm.mk),
# napi build (the addon + generated index.d.ts), tsc --noEmit on the
# typed test files, then the node:test suites in tests/node (ES modules and
# CommonJS; they import 'bale' through its exports map, linked by name in the
# root node_modules), with tests/node/packages.test.mjs installing the npm
# packages from their tarballs into fresh projects.
#
#   make node-build     the release addon (benchmarks, packages)
#   make node-packages  the tarballs a release publishes, in $(NODE_PACK_DIR):
#                       bale, bale-linux-x64-gnu (the release addon) and,
#                       when NODE_WIN32_X64 names its addon, bale-win32-x64
#
# test-node builds the addon with the test profile instead (opt-level 1,
# debug assertions on, as the Rust suites build the core): napi names the
# host's triple, as make test's host builds do (Makefile), so the addon
# shares the Rust suites' compiled dependencies and core rather than
# compiling all of them again with the release profile. The suites check
# behaviour, which the profile does not change; the release build is the
# benchmarks' (make node-build).
#
# NODE_WIN32_X64 is the path of the x86_64-pc-windows-gnu build of the addon
# for the bale-win32-x64 package (the release one by default). test-node
# packs the test profile's build (NODE_TEST_WIN32_X64, made by its own
# rule), and the package test then checks it is an x86-64 PE DLL; both are
# make/node-windows.mk's (read before this one). Set NODE_TEST_WIN32_X64
# empty, the package test packs the package with a placeholder and checks
# its layout only.
NODE_PKG := bindings/node
NODE_WIN32_X64 ?= $(NODE_WIN_ADDON)
NODE_TEST_WIN32_X64 ?= $(NODE_WIN_TEST_ADDON)
$(if $(NODE_WIN_ADDON),,$(error make/node-windows.mk must be read before make/node.mk))
NODE_PACK_DIR ?= $(or $(CARGO_TARGET_DIR),target)/npm
TEST_SETUP += npm-deps

.PHONY: test-node node-deps node-build node-test-build node-packages bench-node

node-deps: npm-deps

node-build: node-deps
	cd $(NODE_PKG) && npm run --silent build

# napi takes the artifact from the folder named for the profile, where
# cargo writes the test profile's into debug/.
NODE_HOST_OUT := $(abspath $(or $(CARGO_TARGET_DIR),target))/$(HOST_TRIPLE)
node-test-build: node-deps
	@mkdir -p $(NODE_HOST_OUT)/debug && ln -sfn debug $(NODE_HOST_OUT)/test
	cd $(NODE_PKG) && npm run --silent build:test

test-node: node-test-build $(NODE_TEST_WIN32_X64)
	cd $(NODE_PKG) && npx --no-install tsc --noEmit -p tsconfig.json
	BALE_NODE_WIN32_X64=$(NODE_TEST_WIN32_X64) npm run --silent test:node

node-packages: node-build $(NODE_WIN32_X64)
	node scripts/node-packages.mjs $(NODE_PACK_DIR) linux-x64-gnu=$(NODE_PKG)/bale.linux-x64-gnu.node \
		$(if $(NODE_WIN32_X64),win32-x64=$(NODE_WIN32_X64))

# W1-W3 against lmdb-js and better-sqlite3, then per-call reads against
# lmdb-js (bench/percall.sh node) (not part of make test).
bench-node: node-build
	./bench/node/run.sh
	./bench/percall.sh node
