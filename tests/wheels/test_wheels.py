"""The Python packages as users install them: the manylinux wheel and the
sdist that `make wheels` leaves in BALE_WHEEL_DIR, each installed into a
fresh venv (the sdist built from source there by pip: maturin from PyPI in
pip's build isolation, and cargo), where an import smoke test and the golden
corpus (tests/python/test_corpus.py) run. The venvs live in
BALE_WHEEL_WORK, made anew each run. The sdist build shares CARGO_TARGET_DIR
with the other host builds; BALE_SDIST_PROFILE names the cargo profile it
builds with (maturin's --profile, through MATURIN_PEP517_ARGS; release when
unset): make test gives it the dev profile, whose compiled dependencies
are the Rust suites' (make/python.mk). A missing wheel or sdist fails."""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent
TARGET = Path(os.environ.get("CARGO_TARGET_DIR") or REPO / "target")
# Not TARGET / "wheels", where maturin puts what pip builds.
WHEEL_DIR = Path(os.environ.get("BALE_WHEEL_DIR") or TARGET / "dist")
WORK = Path(os.environ.get("BALE_WHEEL_WORK") or TARGET / "wheel-check")
# The Python that has auditwheel, for scripts/wheel_info.py: make's venv of
# the wheel tools (make/python.mk), or this one.
WHEEL_PYTHON = os.environ.get("BALE_WHEEL_PYTHON") or sys.executable
PYTEST = next(
    line.strip() for line in (REPO / "bindings/python/requirements-test.txt").read_text().splitlines()
    if line.startswith("pytest==")
)

SMOKE = """
import json, pathlib, sys, tempfile
import bale
with tempfile.TemporaryDirectory() as d:
    d = pathlib.Path(d)
    with bale.Tree.open(d / "a.bale", create=True, key_codec="utf8", value_codec="json") as t:
        t["asset/1"] = {"name": "tree.png"}
        with t.write() as txn:
            txn["asset/2"] = {"name": "rock.png"}
    with bale.Tree.open(d / "a.bale", readonly=True, key_codec="utf8", value_codec="json") as t:
        tree = [t["asset/2"], list(t.keys())]
    with bale.BitableWriter(d / "t.bitable") as w:
        for i in range(1000):
            w.append(b"key/%04d" % i, b"value %d" % i)
        w.finish()
    with bale.Bitable.open(d / "t.bitable") as b:
        table = [len(b), b.get(b"key/0421").decode()]
print(json.dumps({
    "prefix": sys.prefix,
    "package": bale.__file__,
    "extension": bale._bale.__file__,
    "tree": tree,
    "table": table,
}))
"""


def one(pattern):
    found = sorted(WHEEL_DIR.glob(pattern))
    assert len(found) == 1, f"{WHEEL_DIR}/{pattern}: {len(found)} files (run `make wheels`)"
    return found[0]


def run(cmd, **kwargs):
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kwargs)
    assert r.returncode == 0, f"{' '.join(map(str, cmd))} exited with {r.returncode}:\n{r.stdout}{r.stderr}"
    return r.stdout


def fresh_venv(name):
    path = WORK / name
    shutil.rmtree(path, ignore_errors=True)
    run([sys.executable, "-m", "venv", path])
    return path / "bin" / "python"


def check_installed(python):
    """The smoke test and the corpus through the package installed in `python`'s venv."""
    venv = python.parent.parent
    # -I: nothing from the working directory or PYTHONPATH can stand in for the package.
    out = json.loads(run([python, "-I", "-c", SMOKE], cwd=venv))
    site = venv / "lib"
    assert Path(out["prefix"]) == venv
    assert Path(out["package"]).is_relative_to(site), out["package"]
    assert Path(out["extension"]).name == "_bale.abi3.so"
    assert Path(out["extension"]).is_relative_to(site), out["extension"]
    assert out["tree"] == [{"name": "rock.png"}, ["asset/1", "asset/2"]]
    assert out["table"] == [1000, "value 421"]

    run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", PYTEST])
    corpus = run(
        [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", REPO / "tests/python/test_corpus.py"],
        cwd=venv,
    )
    summary = corpus.strip().splitlines()[-1]
    assert " passed" in summary and "skipped" not in summary and "failed" not in summary, corpus
    return int(summary.split()[0])


def test_wheel_tags_and_glibc():
    wheel = one("bale-*.whl")
    i = json.loads(run([WHEEL_PYTHON, REPO / "scripts/wheel_info.py", "--json", wheel]))
    assert i["tags"] == ["cp311-abi3-manylinux2014_x86_64", "cp311-abi3-manylinux_2_17_x86_64"]
    assert i["root_is_purelib"] == "false"
    assert i["requires_python"] == ">=3.11"
    assert tuple(map(int, i["glibc"].split("."))) <= (2, 17), i["glibc"]
    assert i["auditwheel_platform"] == "manylinux_2_17_x86_64"
    assert i["extension_modules"] == ["bale/_bale.abi3.so"]
    package = [f for f in i["files"] if not f.startswith("bale-0.1.0.dist-info/")]
    assert package == sorted(
        f"bale/{f}" for f in ["__init__.py", "_bale.abi3.so", "_bale.pyi", "_support.py", "_views.py", "py.typed"]
    )


def test_sdist_holds_the_sources_to_build_and_nothing_else():
    with tarfile.open(one("bale-*.tar.gz")) as tar:
        names = [n.split("/", 1)[1] for n in tar.getnames() if "/" in n]
    for f in ["pyproject.toml", "Cargo.toml", "Cargo.lock", "PKG-INFO", "core/Cargo.toml", "core/src/lib.rs",
              "bindings/python/Cargo.toml", "bindings/python/src/lib.rs", "bindings/python/python/bale/__init__.py",
              "bindings/python/python/bale/py.typed"]:
        assert f in names, f"{f} is not in the sdist"
    tops = {n.split("/")[0] for n in names}
    assert tops <= {"pyproject.toml", "Cargo.toml", "Cargo.lock", "PKG-INFO", "README.md", "core", "bindings"}, tops
    assert {n.split("/")[1] for n in names if n.startswith("bindings/")} == {"python"}
    for n in names:
        assert not n.startswith(("target/", "tests/", "core/tests/", "core/fuzz/")), n
        assert "__pycache__" not in n and ".venv" not in n, n


def test_wheel_in_a_fresh_venv():
    python = fresh_venv("wheel")
    run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-index", one("bale-*.whl")])
    assert check_installed(python) > 50


def test_sdist_built_from_source_in_a_fresh_venv():
    python = fresh_venv("sdist")
    # The host's triple spelt out, as `maturin build --zig` and `napi build`
    # spell it: cargo then builds in the directory of theirs and recompiles
    # only what the compiler settings set apart, not every dependency.
    # BALE_BUILD_KEY (core/build.rs) is the hash of the sdist's bytes:
    # cargo judges the project's own files by their times, and maturin
    # gives every file of an sdist the same time in 2006, so a key that
    # stayed the same while the sources changed (the sdist's path did)
    # would let an earlier build stand in for compiling them.
    host = os.environ.get("CARGO_BUILD_TARGET") or next(
        line.split()[1] for line in run(["rustc", "-vV"]).splitlines() if line.startswith("host:")
    )
    sdist = one("bale-*.tar.gz")
    env = {
        **os.environ,
        "CARGO_TARGET_DIR": str(TARGET.resolve()),
        "CARGO_BUILD_TARGET": host,
        "BALE_BUILD_KEY": sdist_build_key(sdist),
    }
    if os.environ.get("BALE_SDIST_PROFILE"):
        env["MATURIN_PEP517_ARGS"] = f"--profile {os.environ['BALE_SDIST_PROFILE']}"
    run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", sdist], env=env)
    assert check_installed(python) > 50


def sdist_build_key(sdist):
    """The build key of an sdist's sources: the hash of its bytes."""
    return "sdist " + hashlib.sha256(Path(sdist).read_bytes()).hexdigest()


def test_sdist_build_key_follows_the_bytes(tmp_path):
    a, b, c = tmp_path / "a.tar.gz", tmp_path / "b.tar.gz", tmp_path / "c.tar.gz"
    a.write_bytes(b"one")
    b.write_bytes(b"one")
    c.write_bytes(b"two")
    assert sdist_build_key(a) == sdist_build_key(b)
    assert sdist_build_key(a) != sdist_build_key(c)


@pytest.fixture(autouse=True, scope="module")
def _clean():
    yield
    shutil.rmtree(WORK, ignore_errors=True)
