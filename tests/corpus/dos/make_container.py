"""Writes tests/corpus/dos/container, a disk-objectstore container made by
the real disk-objectstore package, and objects.json, what it holds.

Run once, by hand, with disk-objectstore installed (the tests never run it):

    python tests/corpus/dos/make_container.py

The container holds loose objects, packed objects stored raw and stored
zlib-compressed, an empty object (packed raw: a zero-length record), and one
object both loose and packed, as `pack_all_loose` leaves it until
`clean_storage` runs. The contents are fixed; the container id in
config.json and the SQLite file's bytes are whatever the package writes.
"""

import hashlib
import json
import shutil
import sys
from pathlib import Path

import disk_objectstore
from disk_objectstore import Container

HERE = Path(__file__).resolve().parent
ROOT = HERE / "container"


def noise(n: int, seed: int) -> bytes:
    """`n` incompressible bytes from a fixed seed (SHA-256 in counter mode)."""
    out = bytearray()
    i = 0
    while len(out) < n:
        out += hashlib.sha256(b"%d:%d" % (seed, i)).digest()
        i += 1
    return bytes(out[:n])


def main() -> None:
    if ROOT.exists():
        shutil.rmtree(ROOT)
    c = Container(str(ROOT))
    c.init_container(clear=True, loose_prefix_len=2, hash_type="sha256", compression_algorithm="zlib+1")
    where: dict[str, tuple[str, bool]] = {}

    # Packed by pack_all_loose and left loose too (no clean_storage).
    both = b"packed from loose, and still loose\n"
    where[c.add_object(both)] = ("loose+packed", False)
    c.pack_all_loose(compress=False)

    # Loose only.
    for data in (b"a loose object\n", noise(70_000, 1)):
        where[c.add_object(data)] = ("loose", False)

    # Packed raw, the empty object among them.
    raw = [b"packed raw\n", b"", noise(150_000, 2), b"x" * 4096]
    for key in c.add_objects_to_pack(raw, compress=False):
        where[key] = ("packed", False)

    # Packed zlib-compressed: text that shrinks, and noise that does not.
    text = b"".join(b"line %05d of a compressible object\n" % i for i in range(3000))
    for key in c.add_objects_to_pack([b"packed compressed\n", text, noise(20_000, 3)], compress=True):
        where[key] = ("packed", True)
    c.close()

    contents = {hashlib.sha256(d).hexdigest(): d for d in [both, b"a loose object\n", noise(70_000, 1), *raw,
                                                          b"packed compressed\n", text, noise(20_000, 3)]}
    assert set(contents) == set(where), "every object was named"
    objects = [
        {"id": k, "size": len(contents[k]), "stored": where[k][0], "compressed": where[k][1]}
        for k in sorted(contents)
    ]
    doc = {
        "producer": f"disk-objectstore {disk_objectstore.__version__} (Python {sys.version.split()[0]}), "
        "tests/corpus/dos/make_container.py",
        "hash": "sha256",
        "count": len(objects),
        "bytes": sum(o["size"] for o in objects),
        "objects": objects,
    }
    (HERE / "objects.json").write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
