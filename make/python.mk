# The Python package (bindings/python; the root pyproject.toml points
# maturin at it): an abi3 wheel for CPython >= 3.11, installed into .venv.
#
#   make test-python   create .venv if missing, `pip install .` (maturin
#                      comes through pip's build isolation; cargo reuses
#                      target/release), run tests/python with pytest, then
#                      check the .pyi stubs against the built module, and
#                      mypy --strict over tests/python/typing_usage.py (the
#                      types a user of the package sees)
#   make bench-python  W1-W3 for bale, py-lmdb and sqlite3 (installs lmdb),
#                      then per-call reads against py-lmdb (bench/percall.sh)
#
# Nothing is skipped: a missing corpus fails, and so does a pytest run that
# collects no tests (exit status 5 is non-zero like any other failure).

BINDING_TESTS += test-python

PYTHON ?= python3
PY_VENV := .venv
PY := $(PY_VENV)/bin/python
PY_TEST_DEPS := bindings/python/requirements-test.txt

.PHONY: test-python python-venv python-install bench-python

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

python-install: python-venv
	$(PY) -m pip install -q --disable-pip-version-check .

test-python: python-install $(PY_VENV)/.test-deps
	$(PY) -m pytest -q -p no:cacheprovider tests/python
	cd tests/python && MYPY_CACHE_DIR=../../$(PY_VENV)/.mypy_cache ../../$(PY) -m mypy.stubtest bale \
		--allowlist stubtest-allowlist.txt --ignore-unused-allowlist
	cd tests/python && MYPY_CACHE_DIR=../../$(PY_VENV)/.mypy_cache ../../$(PY) -m mypy --strict typing_usage.py

bench-python: python-install
	@$(PY) -c 'import lmdb' 2>/dev/null || $(PY) -m pip install -q --disable-pip-version-check lmdb
	$(PY) bench/python/kv_bench.py --runs $${RUNS:-3}
	PYTHON=$(PY) ./bench/percall.sh python
