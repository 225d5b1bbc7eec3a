"""ObjectStore.import_dos: the golden disk-objectstore container
(tests/corpus/dos, written by disk-objectstore itself) imported whole, twice,
and damaged copies of it refused with typed errors."""

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

import bale

# CORPUS_DIR, else relative to this file (never to the working directory).
DOS = Path(os.environ.get("CORPUS_DIR") or Path(__file__).resolve().parent.parent / "corpus") / "dos"


@pytest.fixture
def golden():
    doc = json.loads((DOS / "objects.json").read_text())
    assert doc["count"] == len(doc["objects"]) and any(o["size"] == 0 for o in doc["objects"])
    return doc


@pytest.fixture
def container(tmp_path):
    """A copy: SQLite leaves files beside the index it opens, and some tests
    damage the copy."""
    assert (DOS / "container" / "config.json").is_file(), f"golden container missing at {DOS}"
    return Path(shutil.copytree(DOS / "container", tmp_path / "container"))


def test_import_dos_brings_every_object_with_its_bytes_and_twice_nothing_new(tmp_path, container, golden):
    n, size = golden["count"], golden["bytes"]
    with bale.ObjectStore(tmp_path / "sha", create=True, hash="sha256") as s:
        r = s.import_dos(container)
        assert isinstance(r, bale.TransferReport)
        # The object both loose and packed counts once.
        assert r.to_dict() == {"objects_copied": n, "bytes_copied": size, "objects_present": 0}
        for o in golden["objects"]:
            data = s.get(o["id"], verify=True)
            assert len(data) == o["size"] and hashlib.sha256(data).hexdigest() == o["id"]
        assert sorted(s.ids()) == sorted(o["id"] for o in golden["objects"])
        again = s.import_dos(str(container))
        assert (again.objects_copied, again.bytes_copied, again.objects_present) == (0, 0, n)
        contents = [s.get(o["id"]) for o in golden["objects"]]
    # Another hash names the same contents with its own ids.
    with bale.ObjectStore(tmp_path / "b3", create=True) as b3:
        assert b3.import_dos(container).objects_copied == n
        assert sorted(b3.get(i) for i in b3.ids()) == sorted(contents)


def test_import_dos_refuses_a_damaged_container_with_typed_errors(tmp_path, container):
    with bale.ObjectStore(tmp_path / "s", create=True, hash="sha256") as s:
        pack = container / "packs" / "0"
        whole = pack.read_bytes()
        pack.write_bytes(whole[:-100])
        with pytest.raises(bale.CorruptError) as e:
            s.import_dos(container)
        assert e.value.code == "CORRUPT"
        pack.write_bytes(whole)

        idx = container / "packs.idx"
        good = idx.read_bytes()
        idx.write_bytes(b"not a database!!" + good[16:])
        with pytest.raises(bale.CorruptError, match="packs.idx"):
            s.import_dos(container)
        idx.write_bytes(good)

        with pytest.raises(bale.NotFoundError):
            s.import_dos(tmp_path / "nothing")
        with pytest.raises(bale.InvalidTypeError):
            s.import_dos(42)
        assert len(s) == 0, "a failed import commits nothing"
        # The repaired copy imports.
        assert s.import_dos(container).objects_copied == len(json.loads((DOS / "objects.json").read_text())["objects"])


def test_import_dos_needs_a_writable_store(tmp_path, container):
    bale.ObjectStore(tmp_path / "s", create=True).close()
    with bale.ObjectStore(tmp_path / "s", readonly=True) as s:
        with pytest.raises(bale.InvalidArgumentError):
            s.import_dos(container)
