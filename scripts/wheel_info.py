"""Prints what a wheel asks of the machine it installs on: its tags (the
WHEEL file), Requires-Python, the newest glibc symbol version its extension
modules use, and the platform tag `auditwheel show` finds it consistent
with. `--json` prints one JSON document instead.

    python scripts/wheel_info.py [--json] <wheel>

Needs auditwheel (and pyelftools, which it brings) in the running Python."""

import email.parser
import io
import json
import re
import subprocess
import sys
import zipfile

from elftools.elf.elffile import ELFFile


def glibc_needed(elf_bytes):
    """The newest GLIBC_x.y version the ELF object's symbols need, as (x, y)."""
    elf = ELFFile(io.BytesIO(elf_bytes))
    section = elf.get_section_by_name(".gnu.version_r")
    newest = (0, 0)
    if section is not None:
        for _needed, auxes in section.iter_versions():
            for aux in auxes:
                m = re.fullmatch(r"GLIBC_(\d+)\.(\d+)(?:\.\d+)?", aux.name)
                if m:
                    newest = max(newest, (int(m[1]), int(m[2])))
    return newest


def info(path):
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
        wheel_file = next(n for n in names if n.endswith(".dist-info/WHEEL"))
        meta_file = next(n for n in names if n.endswith(".dist-info/METADATA"))
        wheel = email.parser.Parser().parsestr(z.read(wheel_file).decode())
        meta = email.parser.Parser().parsestr(z.read(meta_file).decode())
        modules = {n: glibc_needed(z.read(n)) for n in names if n.endswith(".so")}
    show = subprocess.run(
        [sys.executable, "-m", "auditwheel", "show", path], capture_output=True, text=True, check=True
    ).stdout
    policy = re.search(r'consistent with the following platform tag:\s*"([^"]+)"', show)
    glibc = max(modules.values(), default=(0, 0))
    return {
        "wheel": path,
        "tags": wheel.get_all("Tag"),
        "root_is_purelib": wheel["Root-Is-Purelib"],
        "requires_python": meta["Requires-Python"],
        "files": sorted(names),
        "extension_modules": sorted(modules),
        "glibc": f"{glibc[0]}.{glibc[1]}",
        "auditwheel_platform": policy[1] if policy else None,
    }


def main(argv):
    as_json = "--json" in argv
    paths = [a for a in argv if a != "--json"]
    if len(paths) != 1:
        sys.exit(__doc__)
    i = info(paths[0])
    if as_json:
        print(json.dumps(i))
        return
    print(f"{i['wheel']}:")
    print(f"  tags: {', '.join(i['tags'])}")
    print(f"  Requires-Python: {i['requires_python']}")
    print(f"  newest glibc symbol version needed: {i['glibc']} ({', '.join(i['extension_modules'])})")
    print(f"  auditwheel show: consistent with {i['auditwheel_platform']}")


if __name__ == "__main__":
    main(sys.argv[1:])
