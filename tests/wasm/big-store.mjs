// A ~1 GiB store for the lazy-read tests, written by the `bale` CLI: one
// 1 GiB value of deterministic incompressible bytes (AES-128-CTR keystream,
// so any slice can be recomputed) and a few thousand small keys. The caller
// deletes it with `cleanup()`.
import { createCipheriv } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { baleStreamed } from './cli.mjs';

export const BIG_KEY = 'big';
export const BIG_LEN = 1 << 30;
export const SMALL_KEYS = 3000;
export const smallKey = (i) => `small/${String(i).padStart(5, '0')}`;
export const smallValue = (i) => `value of small key ${i}`;

const KEY = Buffer.alloc(16, 7);

/** `len` bytes of the big value from `offset`. */
export function bigBytes(offset, len) {
  const block = Math.floor(offset / 16);
  const iv = Buffer.alloc(16);
  iv.writeBigUInt64BE(BigInt(block), 8);
  const c = createCipheriv('aes-128-ctr', KEY, iv);
  const skip = offset - block * 16;
  return c.update(Buffer.alloc(skip + len)).subarray(skip);
}

export async function makeBigStore() {
  const dir = mkdtempSync(join(tmpdir(), 'bale-big-'));
  const path = join(dir, 'big.bale');
  const cleanup = () => rmSync(dir, { recursive: true, force: true });
  try {
    await baleStreamed(['kv', 'put', path, BIG_KEY, '-', '--create'], async (stdin) => {
      const chunk = 4 << 20;
      for (let off = 0; off < BIG_LEN; off += chunk) {
        if (!stdin.write(bigBytes(off, chunk))) await new Promise((r) => stdin.once('drain', r));
      }
      stdin.end();
    });
    await baleStreamed(['kv', 'load', path], async (stdin) => {
      const lines = [];
      for (let i = 0; i < SMALL_KEYS; i++) lines.push(`${smallKey(i)}\t${smallValue(i)}\n`);
      stdin.end(lines.join(''));
    });
  } catch (e) {
    cleanup();
    throw e;
  }
  return { path, cleanup };
}
