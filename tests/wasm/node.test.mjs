// The wasm package (ES module built with `wasm-bindgen --target web`) in
// Node: the golden corpus through both the in-memory and the lazy backend,
// the API, error mapping, and lazy reads of a ~4.5 GiB store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

// The package's Node entry, which initialises the module itself.
import {
  Bitable,
  Store,
  open,
  errorCodes,
  errorForCode,
  formatVersion,
  version,
} from '../../bindings/wasm/js/node.js';
import { canonical, runCorpus, runQueries } from './corpus.js';
import { CORPUS, assertBaleError, caseBytes, expected, hex, manifest, openLazy } from './helpers.mjs';
import { BIG_KEY, BIG_LEN, SMALL_KEYS, bigBytes, makeBigStore, smallKey, smallValue } from './big-store.mjs';

const ALL_CODES = [
  'NOT_FOUND', 'CORRUPT', 'CHECKSUM_MISMATCH', 'UNSUPPORTED_VERSION', 'NOT_A_BALE_FILE', 'LOCKED',
  'INVALID_ARGUMENT', 'TOO_LARGE', 'CONFLICT', 'CLOSED', 'IO',
];

function checkCorpusResults(results) {
  assert.ok(results.length >= 20, `only ${results.length} corpus cases`);
  const bad = results.filter((r) => !r.ok).map((r) => `${r.id}: ${r.detail}`);
  assert.deepEqual(bad, []);
  assert.ok(results.some((r) => r.kind === 'valid') && results.some((r) => r.kind === 'invalid'));
}

test('module exports', () => {
  assert.equal(formatVersion(), 1);
  assert.match(version(), /^\d+\.\d+\.\d+/);
});

/** Runs `run(openCase)` with case stores read lazily; closes their files after. */
async function withLazyCases(run) {
  const fds = [];
  try {
    return await run((c) => {
      const h = openLazy(join(CORPUS, c.file));
      fds.push(h);
      return h.store;
    });
  } finally {
    for (const h of fds) h.close();
  }
}

const fromBytes = (c) => Store.fromBytes(readFileSync(join(CORPUS, c.file)));

test('corpus: every case from a Uint8Array', async () => {
  const results = await runCorpus(manifest, fromBytes, expected);
  checkCorpusResults(results);
});

test('corpus: every case read lazily through a read callback', async () => {
  const results = await withLazyCases((open) => runCorpus(manifest, open, expected));
  checkCorpusResults(results);
  for (const r of results.filter((r) => r.bytesRead !== undefined)) {
    assert.ok(r.bytesRead > 0, `${r.id}: no bytes counted`);
  }
});

test('corpus: every range query, from a Uint8Array and read lazily', async () => {
  const queriesOf = (c) => JSON.parse(readFileSync(join(CORPUS, c.queries), 'utf8'));
  const total = manifest.cases.filter((c) => c.queries).reduce((n, c) => n + queriesOf(c).queries.length, 0);
  assert.ok(total > 0, 'no range queries in the corpus');
  const bytes = await runQueries(manifest, fromBytes, queriesOf, expected);
  const lazy = await withLazyCases((open) => runQueries(manifest, open, queriesOf, expected));
  for (const results of [bytes, lazy]) {
    assert.equal(results.length, total);
    assert.deepEqual(results.filter((r) => !r.ok).map((r) => `${r.id}: ${r.detail}`), []);
  }
});

test('corpus: open() takes Uint8Array and ArrayBuffer', () => {
  const b = caseBytes('one-key');
  const s = open(b);
  assert.deepEqual(Buffer.from(s.get('hello')).toString(), 'world');
  const ab = b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength);
  assert.equal(open(ab).count, 1);
  // A string is a URL, read with XMLHttpRequest, which Node lacks.
  assertBaleError(() => open('not bytes'), 'INVALID_ARGUMENT', /needs XMLHttpRequest/);
  assertBaleError(() => open(new Blob([b])), 'INVALID_ARGUMENT', /Web Worker/);
});

test('every core error kind maps to a JS Error with name and code', () => {
  assert.deepEqual(errorCodes(), ALL_CODES);
  for (const code of ALL_CODES) {
    const e = errorForCode(code, 'what happened');
    assert.ok(e instanceof Error);
    assert.equal(e.name, 'BaleError');
    assert.equal(e.code, code);
    assert.equal(e.message, `${code}: what happened`);
    assert.ok(typeof e.stack === 'string');
  }
  assertBaleError(() => errorForCode('NO_SUCH_CODE', 'x'), 'INVALID_ARGUMENT');
});

test('errors from real failures are thrown as BaleErrors', () => {
  // Opening: every invalid corpus code is covered by the corpus tests.
  assertBaleError(() => Store.fromBytes(new Uint8Array(0)), 'NOT_A_BALE_FILE');
  const good = caseBytes('thousands');
  assertBaleError(() => Store.fromBytes(good.subarray(0, 40)), 'CORRUPT', /truncated/);
  // A leaf that fails its checksum names its page.
  const flipped = Store.fromBytes(caseBytes('leaf-bit-flip'));
  const e = assertBaleError(() => flipped.range().toArray(), 'CHECKSUM_MISMATCH');
  assert.equal(typeof e.page, 'number');
  // Arguments.
  const s = Store.fromBytes(good);
  assertBaleError(() => s.get(42), 'INVALID_ARGUMENT');
  assertBaleError(() => s.range({ start: 'a' }), 'INVALID_ARGUMENT', /unknown range option "start"/);
  assertBaleError(() => s.range({ gt: 'a', gte: 'b' }), 'INVALID_ARGUMENT');
  assertBaleError(() => s.range({ lt: 'a', lte: 'b' }), 'INVALID_ARGUMENT');
  assertBaleError(() => s.range({ limit: 1.5 }), 'INVALID_ARGUMENT');
  assertBaleError(() => s.range({ reverse: 'yes' }), 'INVALID_ARGUMENT');
  assertBaleError(() => s.range('gt'), 'INVALID_ARGUMENT');
  assertBaleError(() => s.getRange('key-000001', -1, 4), 'INVALID_ARGUMENT');
  assertBaleError(() => s.getRange('key-000001', 0, 2 ** 33), 'TOO_LARGE');
  assertBaleError(() => Store.fromReader(-1, () => new Uint8Array()), 'INVALID_ARGUMENT');
  // Closing: the store and its ranges.
  const r = s.range();
  const it = r[Symbol.iterator]();
  assert.equal(it.next().done, false);
  s.close();
  s.close();
  assert.equal(s.closed, true);
  assertBaleError(() => s.get('key-000001'), 'CLOSED');
  assertBaleError(() => s.count, 'CLOSED');
  assertBaleError(() => it.next(), 'CLOSED');
  assertBaleError(() => [...r], 'CLOSED');
  // The read callback: a throw is IO, a short read is a truncated file.
  assertBaleError(
    () => Store.fromReader(good.length, () => {
      throw new Error('disk on fire');
    }),
    'IO',
    /disk on fire/,
  );
  assertBaleError(() => Store.fromReader(good.length, () => 'nope'), 'IO');
  assertBaleError(() => Store.fromReader(good.length, (o, n) => good.subarray(o, o + Math.min(n, 100))), 'CORRUPT');
  const lazy = Store.fromReader(good.length, (o, n) => good.subarray(o, o + n));
  assert.equal(lazy.count, 2000);
});

test('constructor arguments of the wrong type are INVALID_ARGUMENT', () => {
  // These used to throw a TypeError without a code, NOT_A_BALE_FILE, or an
  // IO error at the first read.
  assertBaleError(() => Store.fromBytes(), 'INVALID_ARGUMENT', /fromBytes\(\) takes a Uint8Array or an ArrayBuffer/);
  assertBaleError(() => Store.fromBytes(42), 'INVALID_ARGUMENT', /fromBytes\(\) takes/);
  assertBaleError(() => Store.fromBytes('bale'), 'INVALID_ARGUMENT', /fromBytes\(\) takes/);
  assertBaleError(() => Store.fromBlob(42), 'INVALID_ARGUMENT', /fromBlob\(\) takes a Blob or a File/);
  assertBaleError(() => Store.fromBlob(caseBytes('one-key')), 'INVALID_ARGUMENT', /fromBlob\(\) takes/);
  assertBaleError(() => Store.fromReader(10, 5), 'INVALID_ARGUMENT', /fromReader\(\) takes a read function/);
  // URLs are read with XMLHttpRequest, which Node lacks: refused, nothing sent.
  assertBaleError(() => Store.fromUrl('http://127.0.0.1:9/x.bale'), 'INVALID_ARGUMENT', /needs XMLHttpRequest/);
  assertBaleError(() => Bitable.fromUrl('http://127.0.0.1:9/x.bitable'), 'INVALID_ARGUMENT', /needs XMLHttpRequest/);
  // An ArrayBuffer is bytes too.
  const b = caseBytes('one-key');
  assert.equal(Store.fromBytes(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength)).count, 1);
});

test('get, has, valueLength and getRange', () => {
  const doc = expected(manifest.cases.find((c) => c.id === 'large-values'));
  const s = Store.fromBytes(caseBytes('large-values'));
  assert.equal(s.count, doc.count);
  for (const [k, v] of doc.entries) {
    const key = Buffer.from(k, 'hex');
    const value = Buffer.from(v, 'hex');
    assert.equal(hex(s.get(key)), v);
    assert.equal(s.has(key), true);
    assert.equal(s.valueLength(key), value.length);
    for (const [off, len] of [[0, 10], [1000, 5000], [value.length - 3, 10], [value.length + 5, 4], [65530, 20]]) {
      assert.equal(hex(s.getRange(key, off, len)), hex(value.subarray(off, off + len)), `${k} ${off}+${len}`);
    }
  }
  assert.equal(s.get('no such key'), undefined);
  assert.equal(s.has('no such key'), false);
  assert.equal(s.valueLength('no such key'), undefined);
  assert.equal(s.getRange('no such key', 0, 1), undefined);
  // Keys as string, Uint8Array and ArrayBuffer are the same key.
  const one = Store.fromBytes(caseBytes('one-key'));
  const k = new TextEncoder().encode('hello');
  for (const key of ['hello', k, k.buffer]) assert.equal(Buffer.from(one.get(key)).toString(), 'world');
});

test('range options against a model of the expected entries', () => {
  for (const id of ['thousands', 'binary-keys', 'deep-tree', 'empty']) {
    const doc = expected(manifest.cases.find((c) => c.id === id));
    const s = Store.fromBytes(caseBytes(id));
    const all = doc.entries; // sorted [keyHex, valueHex]
    const keyHexes = all.map(([k]) => k);
    // Bounds: existing keys, their neighbours, and keys not in the store.
    const probes = new Set(['', '00', 'ff', 'ffff']);
    let seed = 12345;
    const rnd = (n) => ((seed = (seed * 1103515245 + 12345) % 2147483648), seed % n);
    for (let i = 0; i < 25 && keyHexes.length; i++) {
      const k = keyHexes[rnd(keyHexes.length)];
      probes.add(k);
      probes.add(k.slice(0, Math.max(0, k.length - 2)));
      probes.add(`${k}00`);
    }
    const pl = [...probes];
    const pick = () => (rnd(3) === 0 ? undefined : pl[rnd(pl.length)]);
    for (let i = 0; i < 150; i++) {
      const o = {};
      const lo = pick();
      const hi = pick();
      if (lo !== undefined) o[rnd(2) ? 'gt' : 'gte'] = lo;
      if (hi !== undefined) o[rnd(2) ? 'lt' : 'lte'] = hi;
      if (rnd(4) === 0) o.prefix = pl[rnd(pl.length)].slice(0, 2 * rnd(3));
      if (rnd(2)) o.reverse = true;
      if (rnd(4) === 0) o.offset = rnd(8);
      if (rnd(3) === 0) o.limit = rnd(6);
      let want = all.filter(
        ([k]) =>
          (o.gt === undefined || k > o.gt) &&
          (o.gte === undefined || k >= o.gte) &&
          (o.lt === undefined || k < o.lt) &&
          (o.lte === undefined || k <= o.lte) &&
          (o.prefix === undefined || k.startsWith(o.prefix)),
      );
      if (o.reverse) want = want.slice().reverse();
      if (o.offset !== undefined) want = want.slice(o.offset);
      if (o.limit !== undefined) want = want.slice(0, o.limit);
      const opts = {};
      for (const [name, v] of Object.entries(o)) opts[name] = typeof v === 'string' ? Buffer.from(v, 'hex') : v;
      const label = `${id} ${JSON.stringify(o)}`;
      const got = [...s.range(opts)].map(([k, v]) => [hex(k), hex(v)]);
      assert.equal(canonical(got), canonical(want), label);
      const keys = s.keys(opts).toArray().map(hex);
      assert.deepEqual(keys, want.map(([k]) => k), label);
    }
    // A range is iterable again from the start, and iterators are independent.
    const r = s.keys({ limit: 3 });
    assert.deepEqual([...r].map(hex), [...r].map(hex));
  }
  // String bounds are UTF-8 keys.
  const s = Store.fromBytes(caseBytes('thousands'));
  assert.deepEqual(
    [...s.keys({ gte: 'key-000010', lt: 'key-000013' })].map((k) => Buffer.from(k).toString()),
    ['key-000010', 'key-000011', 'key-000012'],
  );
  assert.deepEqual(
    [...s.keys({ prefix: 'key-00199', reverse: true, limit: 2 })].map((k) => Buffer.from(k).toString()),
    ['key-001999', 'key-001998'],
  );
  assert.equal([...s.range({ gt: 'z' })].length, 0);
  assert.equal([...s.range({ gt: 'key-000005', lt: 'key-000001' })].length, 0);
  assert.deepEqual(
    [...s.keys({ prefix: 'key-0019', reverse: true, offset: 2, limit: 2 })].map((k) => Buffer.from(k).toString()),
    ['key-001997', 'key-001996'],
  );
  // One rule in every package: counts are non-negative integers, and a
  // missing value (undefined or null) is the same as no option.
  for (const limit of [-1, Infinity, NaN, '3']) assertBaleError(() => s.range({ limit }), 'INVALID_ARGUMENT');
  assertBaleError(() => s.range({ offset: -2 }), 'INVALID_ARGUMENT', /offset must be a non-negative integer/);
  assertBaleError(() => s.range({ gt: 7 }), 'INVALID_ARGUMENT', /gt must be a key/);
  assert.equal([...s.range({ gt: null, limit: undefined })].length, 2000);
});

test('stat and check', () => {
  const s = Store.fromBytes(caseBytes('after-deletes'));
  const st = s.stat();
  assert.equal(st.entries, s.count);
  assert.equal(st.pageSize, 4096);
  assert.equal(st.formatVersion, 1);
  assert.equal(st.fileBytes, caseBytes('after-deletes').length);
  assert.ok(st.freePages > 0 && st.freeListPages > 0);
  assert.ok(st.fill > 0 && st.fill <= 1);
  // The core's field list, in camelCase, plus the two the package adds.
  assert.deepEqual(Object.keys(st).sort(), [
    'branchPages', 'depth', 'entries', 'fileBytes', 'filePages', 'fill', 'formatVersion', 'freeListPages',
    'freePages', 'inlineValueBytes', 'largePages', 'largeStoredBytes', 'largeValueBytes', 'largeValues',
    'leafPages', 'metaSlot', 'pageSize', 'txn',
  ]);
  for (const k of Object.keys(st)) assert.equal(typeof st[k], 'number', k);
  const big = Store.fromBytes(caseBytes('large-values')).stat();
  assert.equal(big.largeValues, 4);
  assert.ok(big.largeValueBytes > 280000 && big.largePages > 0);
  const c = s.check();
  assert.equal(c.ok, true);
  assert.deepEqual(c.problems, []);
  assert.equal(c.entries, s.count);
  // A damaged leaf is reported with its page, not thrown.
  const bad = Store.fromBytes(caseBytes('leaf-bit-flip')).check();
  assert.equal(bad.ok, false);
  assert.ok(bad.problems.length > 0);
  assert.equal(typeof bad.problems[0].page, 'number');
  assert.match(bad.problems[0].message, /checksum/i);
  // A damaged newest meta: the store opens at the commit before, and check
  // says so, naming the slot; stat names the slot in use.
  const torn = Store.fromBytes(caseBytes('torn-newest-meta'));
  const tc = torn.check();
  assert.equal(tc.ok, false);
  assert.equal(tc.problems[0].page, 3 - tc.metaSlot);
  assert.match(tc.problems[0].message, /meta slot \d is invalid/);
  assert.equal(torn.stat().metaSlot, tc.metaSlot);
});

test('a ~4.5 GiB store: open + one get read a few pages past 4 GiB, not the file', async () => {
  const big = await makeBigStore();
  try {
    const { store, close } = openLazy(big.path);
    try {
      assert.ok(store.fileBytes > BIG_LEN, `${store.fileBytes} bytes`);
      const key = smallKey(1234);
      const v = store.get(key);
      const openAndGet = { bytes: store.bytesRead, reads: store.readCount };
      console.log(`4.5 GiB store (${store.fileBytes} bytes): open + get(${key}) read ${openAndGet.bytes} bytes in ${openAndGet.reads} reads`);
      assert.equal(Buffer.from(v).toString(), smallValue(1234));
      // The first chunk of the cache holds the header and both meta pages;
      // then one chunk per tree level.
      const chunk = store.cacheStats().chunkBytes;
      assert.ok(openAndGet.bytes <= 4 * chunk, `open + get read ${openAndGet.bytes} bytes`);
      assert.ok(openAndGet.reads <= 4, `${openAndGet.reads} reads`);
      assert.equal(store.count, SMALL_KEYS + 1);
      // Slices of the 4.5 GiB value: from the middle, across the 4 GiB
      // mark, and its end; each its block index and a block or two.
      assert.equal(store.valueLength(BIG_KEY), BIG_LEN);
      for (const off of [512 * 1024 * 1024 + 12345, 2 ** 32 - 500, BIG_LEN - 1000]) {
        store.resetCounters();
        assert.equal(hex(store.getRange(BIG_KEY, off, 1000)), hex(bigBytes(off, 1000)), `at ${off}`);
        const sliceBytes = store.bytesRead;
        console.log(`getRange(big, ${off}, 1000) read ${sliceBytes} bytes in ${store.readCount} reads`);
        assert.ok(sliceBytes <= 2 * 65536 + 4 * chunk, `slice at ${off} read ${sliceBytes} bytes`);
      }
      // Listing keys reads leaves, never the value blocks.
      store.resetCounters();
      assert.equal(store.keys({ prefix: 'small/', limit: 10 }).toArray().length, 10);
      assert.ok(store.bytesRead <= 8 * store.pageSize);
      store.close();
    } finally {
      close();
    }
  } finally {
    big.cleanup();
  }
});
