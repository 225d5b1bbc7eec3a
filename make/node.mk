# The Node package (bindings/node): the workspace's npm install (make/npm.mk),
# napi build (release addon + generated index.d.ts), tsc --noEmit on the
# typed test files, then the node:test suites in tests/node (ES modules and
# CommonJS; they import 'bale' through its exports map, linked by name in the
# root node_modules).
NODE_PKG := bindings/node
BINDING_TESTS += test-node

.PHONY: test-node node-deps node-build bench-node

node-deps: npm-deps

node-build: node-deps
	cd $(NODE_PKG) && npm run --silent build

test-node: node-build
	cd $(NODE_PKG) && npx --no-install tsc --noEmit -p tsconfig.json
	npm run --silent test:node

# W1-W3 against lmdb-js and better-sqlite3, then per-call reads against
# lmdb-js (bench/percall.sh node) (not part of make test).
bench-node: node-build
	./bench/node/run.sh
	./bench/percall.sh node
