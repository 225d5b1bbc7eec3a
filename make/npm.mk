# The npm workspace at the repository root (package.json): bindings/node
# (`bale`) and bindings/wasm (`bale-wasm`) share one package-lock.json and
# one node_modules, where npm also links both packages under their names, so
# tests/node and tests/wasm import them as users do. `npm install`, not
# `npm ci`: the lockfile npm writes here lacks @napi-rs/cli's optional
# packages for other platforms, which `npm ci` then asks for.
NPM_STAMP := node_modules/.package-lock.json

.PHONY: npm-deps

npm-deps: $(NPM_STAMP)

$(NPM_STAMP): package.json package-lock.json bindings/node/package.json bindings/wasm/package.json
	@command -v node >/dev/null && command -v npm >/dev/null || { echo "node and npm are missing: install Node.js >= 20.17 (e.g. apt-get install nodejs npm)"; exit 1; }
	npm install --no-audit --no-fund --loglevel=error
	@touch $@
