// A ~4.5 GiB store for the lazy-read tests, written by the `bale` CLI: one
// 4.5 GiB value of deterministic incompressible bytes (AES-128-CTR
// keystream, so any slice can be recomputed) and a few thousand small keys
// written after it. Past 4 GiB on purpose: the small keys' pages and the
// value's tail lie beyond 2^32, where a 32-bit offset in wasm32 would wrap.
import { createCipheriv, createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { baleStreamed } from './cli.mjs';

export const BIG_KEY = 'big';
export const BIG_LEN = 4.5 * 2 ** 30;
export const SMALL_KEYS = 3000;
export const smallKey = (i) => `small/${String(i).padStart(5, '0')}`;
export const smallValue = (i) => `value of small key ${i}`;

const KEY = Buffer.alloc(16, 7);
const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const TARGET = process.env.CARGO_TARGET_DIR ? resolve(REPO, process.env.CARGO_TARGET_DIR) : join(REPO, 'target');

/** `len` bytes of the big value from `offset`. */
export function bigBytes(offset, len) {
  const block = Math.floor(offset / 16);
  const iv = Buffer.alloc(16);
  iv.writeBigUInt64BE(BigInt(block), 8);
  const c = createCipheriv('aes-128-ctr', KEY, iv);
  const skip = offset - block * 16;
  return c.update(Buffer.alloc(skip + len)).subarray(skip);
}

/**
 * The store, written once per build folder (`<target>/test-data/`) and
 * shared by the suites that read it (they only read): its name carries a
 * digest of this generator, so a change here writes a new one. Written
 * under a temporary name and renamed into place, so suites running at once
 * never see half a store. `cleanup()` leaves it for the next suite.
 */
export async function makeBigStore() {
  const digest = createHash('sha256').update(readFileSync(fileURLToPath(import.meta.url))).digest('hex').slice(0, 12);
  const dir = join(TARGET, 'test-data');
  const path = join(dir, `big-${digest}.bale`);
  const cleanup = () => {};
  if (existsSync(path)) return { path, cleanup };
  mkdirSync(dir, { recursive: true });
  const tmp = mkdtempSync(join(dir, 'big-'));
  const part = join(tmp, 'big.bale');
  try {
    await baleStreamed(['kv', 'put', part, BIG_KEY, '-', '--create'], async (stdin) => {
      const chunk = 4 << 20;
      for (let off = 0; off < BIG_LEN; off += chunk) {
        if (!stdin.write(bigBytes(off, chunk))) await new Promise((r) => stdin.once('drain', r));
      }
      stdin.end();
    });
    await baleStreamed(['kv', 'load', part], async (stdin) => {
      const lines = [];
      for (let i = 0; i < SMALL_KEYS; i++) lines.push(`${smallKey(i)}\t${smallValue(i)}\n`);
      stdin.end(lines.join(''));
    });
    renameSync(part, path);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  return { path, cleanup };
}
