"""The golden corpus through the public Python API (tests/corpus/manifest.json,
whose `_comment` gives the procedure for tree stores, object stores,
bitables and remotes, and the range queries of tests/corpus/README.md). A
missing corpus fails, never skips."""

import json
import os
import shutil
from pathlib import Path

import pytest

import bale

# CORPUS_DIR, else relative to this file (never to the working directory).
CORPUS = Path(os.environ.get("CORPUS_DIR") or Path(__file__).resolve().parent.parent / "corpus")


def load_cases(key):
    try:
        return json.loads((CORPUS / "manifest.json").read_text())[key]
    except OSError as e:
        return [{"id": "manifest-missing", "missing": f"corpus manifest missing at {CORPUS}: {e}"}]


CASES = load_cases("cases")
# Object stores: a directory (its files listed under `files`) or one file.
OBJECT_CASES = load_cases("object_cases")
BITABLE_CASES = load_cases("bitable_cases")
# Remotes: bucket folders (their files listed under `files`).
REMOTE_CASES = load_cases("remote_cases")


def read_case(path):
    """Opens read-only without a memory map and reads every entry whole, in key order."""
    with bale.Tree.open(path, readonly=True, mmap=False) as tree, tree.read() as snap:
        entries = [[k.hex(), v.hex()] for k, v in snap.items()]
        return {
            "kind": "store",
            "format_version": tree.format_version,
            "page_size": tree.page_size,
            "count": len(snap),
            "entries": entries,
        }


def read_objects(path):
    """Opens read-only, lists the ids in order and reads each object whole,
    verified against its id."""
    with bale.ObjectStore(path, readonly=True) as store:
        objects = [[oid, store.get(oid, verify=True).hex()] for oid in store.ids()]
        return {
            "kind": "objects",
            "format_version": store.format_version,
            "hash": store.hash,
            "single_file": store.single_file,
            "count": len(objects),
            "objects": objects,
        }


def read_bitable(path, want=None):
    """Opens read-only without a memory map, reads every pair in key order,
    looks every key up again, and answers the probes of `want`."""
    with bale.Bitable.open(path, mmap=False) as t:
        pairs = list(t.items())
        for k, v in pairs:
            assert t[k] == v
        probes = []
        for p in (want or {}).get("probes", []):
            key = bytes.fromhex(p["key"])
            lower = t.lower_bound(key).key
            probes.append({"key": p["key"], "rank": t.rank(key), "lower_bound": None if lower is None else lower.hex(),
                           "found": key in t})
        s = t.stats()
        return {
            "kind": "bitable",
            "format_version": t.format_version,
            "page_size": s.page_size,
            "align": s.align,
            "count": len(t),
            "entries": [[k.hex(), v.hex()] for k, v in pairs],
            "probes": probes,
        }


def read_remote(case, tmp):
    """Copies the remote's folder (a folder bucket keeps working files beside
    its keys), connects a new store of the remote's hash to the copy by a
    file:// URL, pulls everything, lists the ids in order and reads each
    object whole, verified against its id."""
    bucket = tmp / "bucket"
    for f in case["files"]:
        (bucket / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(CORPUS / case["file"] / f, bucket / f)
    with bale.ObjectStore(tmp / "store", create=True, hash=case["hash"]) as store:
        store.connect_remote("corpus", bucket.as_uri())
        pulled = store.pull("corpus")
        info = store.remote_info("corpus")
        objects = [[oid, store.get(oid, verify=True).hex()] for oid in store.ids()]
        assert info.objects == len(objects)
        return {
            "kind": "remote",
            "hash": info.hash,
            "generation": pulled.generation,
            "packs": info.packs,
            "count": len(objects),
            "objects": objects,
        }


def test_corpus_has_valid_and_invalid_cases():
    for cases, least in ((CASES, 20), (OBJECT_CASES, 10), (BITABLE_CASES, 20), (REMOTE_CASES, 15)):
        assert "missing" not in cases[0], cases[0].get("missing")
        assert len(cases) >= least
        assert any("expect" in c for c in cases) and any("error" in c for c in cases)
    assert any(c["single_file"] for c in OBJECT_CASES) and not all(c["single_file"] for c in OBJECT_CASES)


def check_case(case, read):
    if "missing" in case:
        pytest.fail(case["missing"])
    path = CORPUS / case["file"]
    if "expect" in case:
        want = json.loads((CORPUS / case["expect"]).read_text())
        assert read(path) == want
    else:
        with pytest.raises(bale.BaleError) as info:
            read(path)
        assert info.value.code == case["error"], str(info.value)
        assert type(info.value) is bale._support.ERROR_CLASSES[case["error"]]


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_corpus_case(case):
    check_case(case, read_case)


@pytest.mark.parametrize("case", OBJECT_CASES, ids=[c["id"] for c in OBJECT_CASES])
def test_corpus_object_case(case):
    check_case(case, read_objects)


@pytest.mark.parametrize("case", REMOTE_CASES, ids=[c["id"] for c in REMOTE_CASES])
def test_corpus_remote_case(case, tmp_path):
    check_case(case, lambda _: read_remote(case, tmp_path))


@pytest.mark.parametrize("case", BITABLE_CASES, ids=[c["id"] for c in BITABLE_CASES])
def test_corpus_bitable_case(case):
    # The probes come from the expected document; an error case has none.
    want = json.loads((CORPUS / case["expect"]).read_text()) if "expect" in case else None
    check_case(case, lambda path: read_bitable(path, want))


KEY_OPTIONS = ("gt", "gte", "lt", "lte", "prefix")


def load_queries():
    """(case, query) for every query of every case that has a queries file."""
    out = []
    for case in CASES:
        if "queries" in case:
            doc = json.loads((CORPUS / case["queries"]).read_text())
            assert doc["case"] == case["id"], case["queries"]
            out += [(case, q) for q in doc["queries"]]
    return out


QUERIES = [] if "missing" in CASES[0] else load_queries()


def test_corpus_has_range_queries():
    assert any(not q.get("error") for _, q in QUERIES) and any(q.get("error") for _, q in QUERIES)


@pytest.mark.parametrize("case,query", QUERIES, ids=[f"{c['id']}/{q['id']}" for c, q in QUERIES])
def test_corpus_query_on_a_bitable(case, query, tmp_path):
    """The same queries give the same keys on a bitable of the store's pairs."""
    options = {k: bytes.fromhex(v) if k in KEY_OPTIONS else v for k, v in query["request"].items()}
    with bale.Tree.open(CORPUS / case["file"], readonly=True, mmap=False) as tree:
        with bale.BitableWriter(tmp_path / "t.bitable") as w:
            w.append_tree(tree)
            w.finish(durable=False)
    with bale.Bitable.open(tmp_path / "t.bitable") as t:
        if "error" in query:
            for call in (t.keys, t.items, t.values):
                with pytest.raises(bale.BaleError) as info:
                    call(**options)
                assert info.value.code == query["error"], str(info.value)
            return
        assert [k.hex() for k in t.keys(**options)] == query["keys"]


@pytest.mark.parametrize("case,query", QUERIES, ids=[f"{c['id']}/{q['id']}" for c, q in QUERIES])
def test_corpus_query(case, query):
    # Key options are hex in the file; every other value goes through as it is.
    options = {k: bytes.fromhex(v) if k in KEY_OPTIONS else v for k, v in query["request"].items()}
    values = dict(json.loads((CORPUS / case["expect"]).read_text())["entries"])
    with bale.Tree.open(CORPUS / case["file"], readonly=True, mmap=False) as tree, tree.read() as snap:
        if "error" in query:
            for call in (snap.keys, snap.items, tree.values):
                with pytest.raises(bale.BaleError) as info:
                    call(**options)
                assert info.value.code == query["error"], str(info.value)
            return
        assert [k.hex() for k in snap.keys(**options)] == query["keys"]
        items = [(k.hex(), v.hex()) for k, v in tree.items(**options)]
        assert items == [(k, values[k]) for k in query["keys"]]
