#!/usr/bin/env python3
"""Deterministic data for bench/remote.sh.

  remote_data.py tree DIR MIB SMALL SEED   SMALL files of 0.5-64 KiB (every
      other one text, the rest random bytes) in folders of 100, then random
      files of 2-48 MiB up to MIB MiB in all; kept when DIR already holds
      the same settings
  remote_data.py big FILE MIB SEED         one file of MIB MiB of random bytes
  remote_data.py edit FILE PERCENT SEED SAVE   rewrites PERCENT % of FILE
      with new random bytes, in one contiguous region in its middle, after
      copying that region's bytes to SAVE; prints {"offset", "length"}
  remote_data.py restore FILE PERCENT SAVE     puts the region back
"""
import json
import os
import random
import sys

MIB = 1 << 20
WORDS = ("frame layer exposure sample value note run id time ok error warn "
         "alpha beta gamma delta north south east west red green blue").split()


def text(rng, n):
    """About n bytes of log-like lines: compressible, as text is."""
    out, size, i = [], 0, 0
    while size < n:
        line = f"{i:08d},{rng.random():.6f}," + " ".join(rng.choices(WORDS, k=8)) + "\n"
        out.append(line)
        size += len(line)
        i += 1
    return "".join(out).encode()[:n]


def random_bytes(rng, path, n):
    with open(path, "wb") as f:
        while n > 0:
            k = min(n, 16 * MIB)
            f.write(rng.randbytes(k))
            n -= k


def tree(out, mib, small, seed):
    stamp = os.path.join(out, ".settings")
    want = json.dumps({"mib": mib, "small": small, "seed": seed, "version": 1})
    if os.path.exists(stamp) and open(stamp).read() == want:
        return
    if os.path.exists(out):
        raise SystemExit(f"{out} exists with other settings: remove it")
    rng = random.Random(seed)
    total = 0
    for i in range(small):
        d = os.path.join(out, "small", f"{i // 100:03d}")
        os.makedirs(d, exist_ok=True)
        n = rng.randint(512, 64 * 1024)
        data = text(rng, n) if i % 2 == 0 else rng.randbytes(n)
        with open(os.path.join(d, f"{i:05d}.{'txt' if i % 2 == 0 else 'bin'}"), "wb") as f:
            f.write(data)
        total += n
    os.makedirs(os.path.join(out, "large"), exist_ok=True)
    j = 0
    while total < mib * MIB:
        n = min(rng.randint(2 * MIB, 48 * MIB), mib * MIB - total)
        random_bytes(rng, os.path.join(out, "large", f"{j:03d}.bin"), n)
        total += n
        j += 1
    with open(stamp, "w") as f:
        f.write(want)


def region(path, percent):
    size = os.path.getsize(path)
    length = int(size * percent / 100)
    return (size - length) // 2, length


def edit(path, percent, seed, save):
    offset, length = region(path, percent)
    rng = random.Random(seed)
    with open(path, "r+b") as f:
        f.seek(offset)
        with open(save, "wb") as out:
            out.write(f.read(length))
        f.seek(offset)
        left = length
        while left > 0:
            k = min(left, 16 * MIB)
            f.write(rng.randbytes(k))
            left -= k
    print(json.dumps({"offset": offset, "length": length}))


def restore(path, percent, save):
    offset, length = region(path, percent)
    data = open(save, "rb").read()
    if len(data) != length:
        raise SystemExit(f"{save} holds {len(data)} bytes, not the region's {length}")
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(data)


def main(argv):
    if len(argv) == 5 and argv[0] == "tree":
        tree(argv[1], int(argv[2]), int(argv[3]), int(argv[4]))
    elif len(argv) == 4 and argv[0] == "big":
        random_bytes(random.Random(int(argv[3])), argv[1], int(argv[2]) * MIB)
    elif len(argv) == 5 and argv[0] == "edit":
        edit(argv[1], float(argv[2]), int(argv[3]), argv[4])
    elif len(argv) == 4 and argv[0] == "restore":
        restore(argv[1], float(argv[2]), argv[3])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
