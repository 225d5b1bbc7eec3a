# The Node package (bindings/node): npm install (not npm ci: the lockfile
# npm writes here lacks @napi-rs/cli's other-platform optional packages),
# napi build (release addon + generated index.d.ts), the package linked into
# tests/node by name (so the suites import 'bale' through its exports map),
# tsc --noEmit on the typed test files, then the node:test suites in
# tests/node (ES modules and CommonJS).
NODE_PKG := bindings/node
BINDING_TESTS += test-node

.PHONY: test-node node-deps node-build bench-node

node-deps:
	@command -v node >/dev/null && command -v npm >/dev/null || { echo "node and npm are missing: install Node.js >= 20.17 (e.g. apt-get install nodejs npm)"; exit 1; }
	cd $(NODE_PKG) && npm install --no-audit --no-fund --loglevel=error

node-build: node-deps
	cd $(NODE_PKG) && npm run --silent build

test-node: node-build
	cd tests/node && npm install --no-audit --no-fund --loglevel=error
	cd $(NODE_PKG) && npx --no-install tsc --noEmit -p tsconfig.json
	node --test tests/node/*.test.mjs tests/node/*.test.cjs

# W1-W3 against lmdb-js and better-sqlite3, then per-call reads against
# lmdb-js (bench/percall.sh node) (not part of make test).
bench-node: node-build
	./bench/node/run.sh
	./bench/percall.sh node
