// What several wasm test files share: the golden corpus, a lazily read
// store over a file, and the check that a call throws a BaleError.
import assert from 'node:assert/strict';
import { closeSync, fstatSync, openSync, readFileSync, readSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Store } from '../../bindings/wasm/js/node.js';

/** Deterministic bytes that do not compress: stored out of line, in blocks. */
export const noise = (n, seed) => {
  const b = new Uint8Array(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    b[i] = x & 0xff;
  }
  return b;
};

export const hex = (b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');

// A missing corpus fails the run: readFileSync throws.
export const CORPUS = process.env.CORPUS_DIR
  ? resolve(process.env.CORPUS_DIR)
  : join(dirname(fileURLToPath(import.meta.url)), '..', 'corpus');
export const manifest = JSON.parse(readFileSync(join(CORPUS, 'manifest.json'), 'utf8'));
export const expected = (c) => JSON.parse(readFileSync(join(CORPUS, c.expect), 'utf8'));
export const caseBytes = (id) => readFileSync(join(CORPUS, manifest.cases.find((c) => c.id === id).file));

/** A read function over `fd` for `fromReader` (whole reads, short at the end). */
export const readerOf = (fd, onRead = () => {}) => (offset, length) => {
  onRead(offset, length);
  const buf = new Uint8Array(length);
  let got = 0;
  while (got < length) {
    const n = readSync(fd, buf, got, length - got, offset + got);
    if (n === 0) break;
    got += n;
  }
  return buf.subarray(0, got);
};

/**
 * A store over a file read lazily with fs.readSync; `onRead(offset, length)`
 * sees every read of the file.
 */
export function openLazy(path, options, onRead = () => {}) {
  const fd = openSync(path, 'r');
  const store = Store.fromReader(fstatSync(fd).size, readerOf(fd, onRead), options);
  return { store, close: () => closeSync(fd) };
}

export function assertBaleError(fn, code, re) {
  let thrown;
  try {
    fn();
  } catch (e) {
    thrown = e;
  }
  assert.ok(thrown !== undefined, `expected a ${code} error`);
  assert.ok(thrown instanceof Error, `threw a non-Error: ${String(thrown)}`);
  assert.equal(thrown.name, 'BaleError');
  assert.equal(thrown.code, code, thrown.message);
  if (re) assert.match(thrown.message, re);
  return thrown;
}
