// The chunk cache of lazily read stores (Store.fromReader here; fromBlob
// in the browser suite): source reads are counted in the read callback,
// pages asked for in cacheStats().requests. No timings.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { Store } from '../../bindings/wasm/js/node.js';
import { bale } from './cli.mjs';
import { assertBaleError, caseBytes, openLazy } from './helpers.mjs';

const KEYS = 40000;
const key = (i) => `key/${String(i).padStart(6, '0')}`;
const value = (i) => `value ${i} `.repeat(6);

let dir;
let path;

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'bale-cache-'));
  path = join(dir, 'scan.bale');
  const lines = [];
  for (let i = 0; i < KEYS; i++) lines.push(`${key(i)}\t${value(i)}\n`);
  bale(['kv', 'load', '--create', path], lines.join(''));
});

after(() => rmSync(dir, { recursive: true, force: true }));

/** A lazily read store of the test file, recording every source read. */
function counted(options) {
  const reads = [];
  const h = openLazy(path, options, (offset, length) => reads.push({ offset, length }));
  return { ...h, reads };
}

test('a full scan reads ahead: far fewer source reads than pages read', () => {
  const cacheBytes = 512 << 10;
  const { store, close, reads } = counted({ cacheBytes });
  try {
    const pages = store.stat().leafPages;
    assert.ok(store.fileBytes > 4 * cacheBytes, `${store.fileBytes} bytes: too small to fill the cache`);
    store.resetCounters();
    reads.length = 0;
    let n = 0;
    for (const [k, v] of store.range()) {
      if (n % 9973 === 0) {
        assert.equal(Buffer.from(k).toString(), key(n));
        assert.equal(Buffer.from(v).toString(), value(n));
      }
      n++;
    }
    assert.equal(n, KEYS);
    const st = store.cacheStats();
    console.log(`scan of ${pages} leaf pages: ${st.requests} page reads, ${reads.length} source reads, ${st.aheadChunks} chunks read ahead`);
    // Every leaf was asked for (and the branch pages, again per batch).
    assert.ok(st.requests >= pages, `${st.requests} requests for ${pages} leaves`);
    assert.equal(reads.length, store.readCount);
    assert.ok(reads.length * 10 <= pages, `${reads.length} source reads for ${pages} leaf pages`);
    // Read-ahead made source reads longer than one chunk.
    assert.ok(st.aheadChunks > 0);
    assert.ok(reads.some((r) => r.length > st.chunkBytes));
    // Reads are aligned to chunks.
    assert.ok(reads.every((r) => r.offset % st.chunkBytes === 0));
    // Memory: the cache never holds more than its budget, though the scan
    // went through a file several times larger.
    assert.ok(st.cachedBytes <= st.capacityBytes && st.capacityBytes === cacheBytes, JSON.stringify(st));
  } finally {
    close();
  }
});

test('random reads do not read ahead', () => {
  const { store, close, reads } = counted({ chunkBytes: 4096, cacheBytes: 256 << 10 });
  try {
    store.resetCounters();
    reads.length = 0;
    // Keys from the two halves in turn: no read follows on the one before.
    for (let i = 0; i < 200; i++) {
      const k = i % 2 ? KEYS / 2 + ((i * 7919) % (KEYS / 2)) : (i * 104729) % (KEYS / 2);
      assert.equal(Buffer.from(store.get(key(k))).toString(), value(k));
    }
    const st = store.cacheStats();
    assert.ok(reads.length > 50, `${reads.length} source reads`);
    assert.equal(st.aheadChunks, 0);
    assert.deepEqual(new Set(reads.map((r) => r.length)), new Set([4096]));
    assert.ok(st.cachedBytes <= st.capacityBytes);
  } finally {
    close();
  }
});

test('a page read again comes from the cache', () => {
  const { store, close, reads } = counted();
  try {
    store.get(key(123));
    const n = reads.length;
    for (let i = 0; i < 5; i++) store.get(key(123));
    assert.equal(reads.length, n);
    const st = store.cacheStats();
    assert.ok(st.hits >= 5 * 2, JSON.stringify(st));
    // resetCounters() zeroes the cache counters too, not what it holds.
    store.resetCounters();
    const z = store.cacheStats();
    assert.deepEqual([z.requests, z.hits, z.aheadChunks, z.bypassed], [0, 0, 0, 0]);
    assert.equal(z.cachedBytes, st.cachedBytes);
  } finally {
    close();
  }
});

test('cache options are checked; stores in memory have no cache', () => {
  const bytes = caseBytes('thousands');
  const read = (o, n) => bytes.subarray(o, o + n);
  const lazy = (options) => Store.fromReader(bytes.length, read, options);
  assertBaleError(() => lazy({ chunkBytes: 1000 }), 'INVALID_ARGUMENT', /power of two/);
  assertBaleError(() => lazy({ chunkBytes: -4096 }), 'INVALID_ARGUMENT');
  assertBaleError(() => lazy({ cacheBytes: 4096 }), 'INVALID_ARGUMENT', /at least/);
  assertBaleError(() => lazy({ cacheBytes: '1mb' }), 'INVALID_ARGUMENT');
  assertBaleError(() => lazy({ cache: 1 }), 'INVALID_ARGUMENT', /unknown open option "cache"/);
  assertBaleError(() => lazy(7), 'INVALID_ARGUMENT');
  const s = lazy({ chunkBytes: 8192, cacheBytes: 1 << 16, nothing: undefined });
  assert.deepEqual([s.cacheStats().chunkBytes, s.cacheStats().capacityBytes], [8192, 1 << 16]);
  assert.equal(s.count, 2000);
  assert.equal(lazy(null).cacheStats().chunkBytes, 16384);
  assert.equal(Store.fromBytes(bytes).cacheStats(), undefined);
});

test('a read callback that calls into its own store gets an error, not a trap', () => {
  const bytes = caseBytes('thousands');
  let store = null;
  store = Store.fromReader(bytes.length, (o, n) => {
    if (store) store.get('key-000001');
    return bytes.subarray(o, o + n);
  });
  // The first get misses the cache and calls back; the nested get finds the
  // cache in use.
  const e = assertBaleError(() => store.get('key-001999'), 'IO');
  assert.match(e.message, /called into the store it is reading for/);
  store = null;
});
