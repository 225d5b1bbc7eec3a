# Remotes in S3-compatible buckets (the core's feature `s3`), tested
# against two local servers on 127.0.0.1 with dummy credentials:
#
#   make test-remote-s3   the test binary core/tests/s3 (the bucket; push,
#                         pull, gc) against moto's server mode
#                         (PyPI, into .venv from tests/s3/requirements.txt)
#                         and against s3s-fs (crates.io, `cargo install`ed
#                         into the tools cache when missing, see Makefile), each started
#                         and stopped by tests/s3/with-server.sh
#
# The suite fails, never skips, without a server.


PY_VENV ?= .venv
PY ?= $(PY_VENV)/bin/python
S3_PY_DEPS := tests/s3/requirements.txt
# 0.14.1: later releases need Rust 1.96.
S3S_FS_VERSION := 0.14.1
# Two builds: the suites' unoptimised (--debug: about 130 CPU seconds to
# compile here, against 230 for a release build; the suites move a few
# megabytes), and the benchmarks' release build (bench-remote), whose
# server must not be what is measured.
S3_TOOLS := $(TOOLS_DIR)/s3s-fs-$(S3S_FS_VERSION)
S3S_FS := $(S3_TOOLS)/bin/s3s-fs
S3_TEST_TOOLS := $(TOOLS_DIR)/s3s-fs-$(S3S_FS_VERSION)-debug
S3S_FS_TEST := $(S3_TEST_TOOLS)/bin/s3s-fs

.PHONY: test-remote-s3 s3s-fs-tool s3s-fs-test-tool

$(PY_VENV)/.s3-deps: $(S3_PY_DEPS) | python-venv
	$(PY) -m pip install -q --disable-pip-version-check -r $(S3_PY_DEPS)
	touch $@

S3S_FS_INSTALL = s3s-fs --locked --version $(S3S_FS_VERSION) --features binary
s3s-fs-tool:
	$(call TOOL,$(S3S_FS),s3s-fs $(S3S_FS_VERSION),$(S3S_FS_INSTALL) --root $(S3_TOOLS))
s3s-fs-test-tool:
	$(call TOOL,$(S3S_FS_TEST),s3s-fs $(S3S_FS_VERSION),$(S3S_FS_INSTALL) --debug --root $(S3_TEST_TOOLS))

# The core's own remote unit tests, with the feature, run in test-rust (the
# CLI turns it on there).
S3_TEST = $(CARGO) test $(RUST_TESTED) --locked --test s3

test-remote-s3: $(PY_VENV)/.s3-deps s3s-fs-test-tool
	$(S3_TEST) --no-run
	S3_PYTHON=$(PY) tests/s3/with-server.sh moto -- $(S3_TEST)
	S3S_FS=$(S3S_FS_TEST) tests/s3/with-server.sh s3s -- $(S3_TEST)
