# The Python package (bindings/python; the root pyproject.toml points
# maturin at it): an abi3 wheel for CPython >= 3.11, installed into .venv.
#
#   make wheels        the wheel and the sdist a release publishes, in
#                      $(WHEEL_DIR): maturin build --zig --compatibility
#                      manylinux2014 (zig links against glibc 2.17; maturin
#                      and ziglang come from PyPI into a venv of the tools
#                      cache, whose bin must be on PATH for maturin to find
#                      zig), maturin sdist;
#                      then prints the wheel's tags and the glibc it needs
#   make test-python   that wheel installed into .venv (one release build
#                      serves both), tests/python with pytest, then the .pyi
#                      stubs checked against the built module, and mypy
#                      --strict over tests/python/typing_usage.py (the types
#                      a user of the package sees)
#   make test-wheels   tests/wheels: the wheel's tags, glibc and files, the
#                      sdist's files, and each installed into a fresh venv
#                      (the sdist built from source by pip) running an
#                      import smoke test and tests/python/test_corpus.py
#   make bench-python  W1-W3 for bale, py-lmdb and sqlite3 (installs lmdb),
#                      then per-call reads against py-lmdb (bench/percall.sh)
#
# Nothing is skipped: a missing corpus fails, and so does a pytest run that
# collects no tests (exit status 5 is non-zero like any other failure).


PYTHON ?= python3
PY_VENV := .venv
PY := $(PY_VENV)/bin/python
PY_TEST_DEPS := bindings/python/requirements-test.txt
PY_WHEEL_DEPS := bindings/python/requirements-wheels.txt
WHEEL_DIR ?= $(or $(CARGO_TARGET_DIR),target)/dist

.PHONY: test-python test-wheels wheels python-venv python-install bench-python

# Its pip installs run in the suites' own stages.
TEST_SETUP += python-venv

# Debian's own python3 needs python3-venv for `-m venv`; install it if that is
# what is missing. A venv left without pip is made again.
python-venv:
	@$(PY) -m pip --version >/dev/null 2>&1 || { \
		rm -rf $(PY_VENV); \
		$(PYTHON) -m venv $(PY_VENV) 2>/dev/null || { \
			command -v apt-get >/dev/null && rm -rf $(PY_VENV) && \
			apt-get update -q && apt-get install -y -q python3-venv && \
			$(PYTHON) -m venv $(PY_VENV); }; }

$(PY_VENV)/.test-deps: $(PY_TEST_DEPS) | python-venv
	$(PY) -m pip install -q --disable-pip-version-check -r $(PY_TEST_DEPS)
	touch $@

# maturin, zig and auditwheel live in a venv of the tools cache (Makefile),
# named for their pinned versions, not in the clone's .venv: cargo-zigbuild
# names its linker wrapper after the zig it runs, and cargo builds every
# dependency again when the linker changes, so a zig inside each clone made
# each clone compile all of the wheel's dependencies anew.
WHEEL_TOOLS := $(TOOLS_DIR)/wheel-tools-$(shell sha256sum $(PY_WHEEL_DEPS) | cut -c1-12)
WHEEL_PY := $(WHEEL_TOOLS)/bin/python

# The folder's name holds the hash of the pinned versions, so the file's
# time (new in every clone) is not a reason to install them again.
$(WHEEL_TOOLS)/.ready: | python-venv
	rm -rf $(WHEEL_TOOLS)
	$(PYTHON) -m venv $(WHEEL_TOOLS)
	$(WHEEL_PY) -m pip install -q --disable-pip-version-check -r $(PY_WHEEL_DEPS)
	touch $@

# zig links the wheel, and cargo gives every crate of a build the linker
# (-C linker), which its record of each crate holds: in the folder the
# sdist's build also uses (the host's triple, the system linker), each of
# the two made the other build every dependency again. So the wheel has a
# build folder of its own. With the cache, its target folder is there too:
# maturin writes pyo3's settings into it and passes their path
# (PYO3_CONFIG_FILE), which pyo3's build script watches, so a path inside
# each clone made each clone build pyo3 again.
WHEEL_BUILD_DIR := $(if $(BALE_CACHE),CARGO_BUILD_BUILD_DIR=$(BALE_CACHE)/cargo-build-zig CARGO_TARGET_DIR=$(BALE_CACHE)/cargo-target-zig,CARGO_TARGET_DIR=$(abspath $(or $(CARGO_TARGET_DIR),target))/zig)

wheels: $(WHEEL_TOOLS)/.ready
	rm -f $(WHEEL_DIR)/bale-*.whl $(WHEEL_DIR)/bale-*.tar.gz
	$(WHEEL_BUILD_DIR) PATH="$(WHEEL_TOOLS)/bin:$$PATH" maturin build --release --locked --zig --compatibility manylinux2014 --out $(WHEEL_DIR)
	PATH="$(WHEEL_TOOLS)/bin:$$PATH" maturin sdist --out $(WHEEL_DIR)
	$(WHEEL_PY) scripts/wheel_info.py $(WHEEL_DIR)/bale-*.whl

python-install: wheels
	$(PY) -m pip install -q --disable-pip-version-check --force-reinstall --no-deps $(WHEEL_DIR)/bale-*.whl

test-python: python-install $(PY_VENV)/.test-deps
	$(PY) -m pytest -q -p no:cacheprovider tests/python
	cd tests/python && MYPY_CACHE_DIR=../../$(PY_VENV)/.mypy_cache ../../$(PY) -m mypy.stubtest bale \
		--allowlist stubtest-allowlist.txt --ignore-unused-allowlist
	cd tests/python && MYPY_CACHE_DIR=../../$(PY_VENV)/.mypy_cache ../../$(PY) -m mypy --strict typing_usage.py

# The sdist builds with the dev profile, whose dependencies are those of
# the test profile (the same settings, in the same folder) that the Rust
# suites and the Node addon compile, so it compiles the binding and the
# core alone (tests/wheels). Not the test profile itself: maturin builds
# through `cargo rustc`, where that profile builds the test harness.
test-wheels: wheels $(PY_VENV)/.test-deps
	BALE_WHEEL_DIR=$(WHEEL_DIR) BALE_WHEEL_PYTHON=$(WHEEL_PY) BALE_SDIST_PROFILE=dev $(PY) -m pytest -q -p no:cacheprovider tests/wheels

bench-python: python-install
	@$(PY) -c 'import lmdb' 2>/dev/null || $(PY) -m pip install -q --disable-pip-version-check lmdb
	$(PY) bench/python/kv_bench.py --runs $${RUNS:-3}
	PYTHON=$(PY) ./bench/percall.sh python
