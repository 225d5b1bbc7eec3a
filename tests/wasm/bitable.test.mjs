// The read-only Bitable of the wasm package in Node: the golden corpus's
// bitable cases (from bytes and read lazily), the API against a model of a
// table the native CLI built, the range rules shared with Store (the tree
// cases' range queries, run on bitables the CLI exported from those
// stores), damaged tables, and counters that show lookups read a few
// pages. The Blob path needs FileReaderSync, so it runs in Chromium
// (tests/browser/chromium.test.mjs).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, copyFileSync, fstatSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { Bitable, bitableFormatVersion } from '../../bindings/wasm/js/node.js';
import { canonical, runBitableCorpus, runQueries } from './corpus.js';
import { bale } from './cli.mjs';
import { CORPUS, assertBaleError, expected, hex, manifest, readerOf } from './helpers.mjs';

const bitableCase = (id) => manifest.bitable_cases.find((c) => c.id === id);
const caseFile = (id) => join(CORPUS, bitableCase(id).file);
const fromBytes = (c, options) => Bitable.fromBytes(readFileSync(join(CORPUS, c.file)), options);

/** A table over a file read lazily with fs.readSync; `close()` closes the file. */
function openLazy(path, options) {
  const fd = openSync(path, 'r');
  const table = Bitable.fromReader(fstatSync(fd).size, readerOf(fd), options);
  return { table, close: () => closeSync(fd) };
}

function checkCorpus(results) {
  assert.equal(results.length, manifest.bitable_cases.length);
  assert.deepEqual(results.map((r) => r.id), manifest.bitable_cases.map((c) => c.id));
  assert.deepEqual(results.filter((r) => !r.ok).map((r) => `${r.id}: ${r.detail}`), []);
  assert.ok(results.filter((r) => r.kind === 'valid').length >= 7);
  assert.ok(results.filter((r) => r.kind === 'invalid').length >= 14);
  for (const r of results.filter((r) => r.kind === 'valid')) assert.ok(r.bytesRead > 0, `${r.id}: nothing counted`);
}

test('corpus: every bitable case from a Uint8Array', async () => {
  checkCorpus(await runBitableCorpus(manifest, (c) => fromBytes(c), expected));
});

test('corpus: every bitable case read lazily through a read callback', async () => {
  const files = [];
  try {
    const open = (c) => {
      const h = openLazy(join(CORPUS, c.file), { chunkBytes: 4096 });
      files.push(h);
      return h.table;
    };
    checkCorpus(await runBitableCorpus(manifest, open, expected));
  } finally {
    for (const h of files) h.close();
  }
});

test('corpus: opening and one lookup read a few pages of a table, not the file', () => {
  for (const id of ['bitable-deep', 'bitable-large-values']) {
    const want = expected(bitableCase(id));
    const size = readFileSync(caseFile(id)).length;
    const half = want.entries.length / 2;
    const [key, value] = want.entries.find(([, v], i) => i >= half && v.length / 2 <= want.page_size / 4);
    // In memory every page read is counted: the header, then one page per level.
    const t = fromBytes(bitableCase(id));
    const depth = t.stats().depth;
    assert.equal(t.readCount, 1 + 2 * (depth - 1), 'open, then the two edges of the tree');
    t.resetCounters();
    assert.equal(t.bytesRead, 0);
    assert.equal(t.readCount, 0);
    const opened = fromBytes(bitableCase(id));
    const afterOpen = opened.bytesRead;
    assert.equal(opened.readCount, 1);
    assert.ok(afterOpen > 0 && afterOpen <= want.page_size, `open read ${afterOpen} bytes`);
    assert.equal(hex(opened.get(Buffer.from(key, 'hex'))), value);
    assert.equal(opened.readCount, 1 + depth);
    assert.equal(opened.bytesRead, afterOpen + depth * want.page_size);
    // Lazily through 4 KiB chunks: at most a read per page (the chunk
    // cache reads ahead when the pages follow each other).
    const h = openLazy(caseFile(id), { chunkBytes: 4096 });
    try {
      assert.equal(hex(h.table.get(Buffer.from(key, 'hex'))), value);
      const read = h.table.bytesRead;
      console.log(`${id} (${size} bytes, depth ${depth}): open + one lookup read ${read} bytes in ${h.table.readCount} reads`);
      assert.ok(h.table.readCount <= 1 + depth, `${id}: ${h.table.readCount} reads`);
      assert.ok(read * 10 < size, `${id}: ${read} of ${size} bytes`);
    } finally {
      h.close();
    }
  }
});

test('module export: the bitable format version', () => {
  assert.equal(bitableFormatVersion(), 1);
  const t = fromBytes(bitableCase('bitable-small'));
  assert.equal(t.formatVersion, bitableFormatVersion());
});

// A table built by the native CLI from binary records, and its model.
let dir;
let path;
let model; // sorted [Buffer key, Buffer value]
const LARGE = 2_500_000;

function record(k, v) {
  const head = Buffer.alloc(4);
  head.writeUInt32LE(k.length);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(v.length));
  return [head, k, len, v];
}

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'bale-wasm-bitable-'));
  const pairs = new Map();
  let seed = 7;
  const rnd = (n) => ((seed = (seed * 1103515245 + 12345) % 2147483648), seed % n);
  for (let i = 0; i < 20000; i++) {
    pairs.set(`item/${String(i).padStart(6, '0')}`, Buffer.from(`value ${i} `.repeat(1 + rnd(12))));
  }
  for (const k of ['', '\0', 'a', 'a\0', 'ab']) pairs.set(k, Buffer.from(`v:${k}`));
  pairs.set('empty', Buffer.alloc(0));
  const random = Buffer.alloc(300_000);
  for (let i = 0; i < random.length; i++) random[i] = rnd(256);
  pairs.set('large/a', random);
  pairs.set('large/b', Buffer.from(Array.from({ length: LARGE / 10 }, (_, i) => String(i).padStart(10, '.')).join('')));
  pairs.set('large/c', Buffer.alloc(1025, 7)); // just above the inline limit of 4 KiB pages
  pairs.set('large/d', Buffer.alloc(1024, 8)); // at it: inline
  model = [...pairs].map(([k, v]) => [Buffer.from(k), v]).sort((a, b) => Buffer.compare(a[0], b[0]));
  const input = join(dir, 'records.bin');
  writeFileSync(input, Buffer.concat(model.flatMap(([k, v]) => record(k, v))));
  path = join(dir, 'table.bitable');
  bale(['bitable', 'build', path, input, '--format', 'binary']);
});

after(() => rmSync(dir, { recursive: true, force: true }));

const keysOf = (entries) => entries.map(([k]) => hex(k));

test('get, has, valueLength and getRange against the model', () => {
  const t = Bitable.fromBytes(readFileSync(path));
  assert.equal(t.count, model.length);
  assert.equal(t.pageSize, 4096);
  assert.equal(t.maxValueBytes, 64 << 20);
  for (let i = 0; i < model.length; i += 97) {
    const [k, v] = model[i];
    assert.equal(hex(t.get(k)), hex(v));
    assert.equal(t.has(k), true);
    assert.equal(t.valueLength(k), v.length);
  }
  for (const [k, v] of model.filter(([k]) => k.toString().startsWith('large/') || k.length < 3)) {
    assert.equal(hex(t.get(k)), hex(v), k.toString());
    for (const [off, len] of [[0, 10], [65530, 20], [Math.max(0, v.length - 3), 10], [v.length + 5, 4], [0, 0], [131072, 70000]]) {
      assert.equal(hex(t.getRange(k, off, len)), hex(v.subarray(off, off + len)), `${k} ${off}+${len}`);
    }
  }
  for (const absent of ['item/', 'item/0200000', 'large/', 'zzz', new Uint8Array([0xff])]) {
    assert.equal(t.get(absent), undefined);
    assert.equal(t.has(absent), false);
    assert.equal(t.valueLength(absent), undefined);
    assert.equal(t.getRange(absent, 0, 1), undefined);
  }
  // Keys as string, Uint8Array and ArrayBuffer are the same key.
  const k = new TextEncoder().encode('item/000042');
  for (const key of ['item/000042', k, k.buffer]) assert.equal(hex(t.get(key)), hex(model.find(([m]) => m.equals(k))[1]));
});

test('cursors: bounds, find, first, last, select, rank, next and prev', () => {
  const t = Bitable.fromBytes(readFileSync(path));
  const n = model.length;
  const first = t.first();
  assert.equal(first.valid, true);
  assert.equal(first.ordinal, 0);
  assert.equal(hex(first.key), '');
  assert.equal(first.prev(), false);
  assert.equal(first.valid, false);
  assert.equal(first.key, undefined);
  assert.equal(first.value, undefined);
  assert.equal(first.ordinal, n);
  const last = t.last();
  assert.equal(hex(last.key), hex(model[n - 1][0]));
  assert.equal(last.ordinal, n - 1);
  assert.equal(last.next(), false);
  // A walk down from the last pair crosses every leaf backwards.
  const c = t.last();
  let steps = 0;
  while (c.prev()) steps++;
  assert.equal(steps, n - 1);
  // Every 37th pair by ordinal, by key, and its neighbours.
  for (let i = 0; i < n; i += 37) {
    const [k, v] = model[i];
    const s = t.select(i);
    assert.equal(hex(s.key), hex(k));
    assert.equal(hex(s.value), hex(v));
    assert.equal(s.valueLength, v.length);
    assert.equal(t.rank(k), i);
    const f = t.find(k);
    assert.equal(f.ordinal, i);
    assert.equal(hex(t.lowerBound(k).key), hex(k));
    const up = t.upperBound(k);
    assert.equal(up.ordinal, i + 1);
    assert.equal(up.key === undefined ? null : hex(up.key), i + 1 < n ? hex(model[i + 1][0]) : null);
    // Just above k: not found, rank i + 1, lower bound the next key.
    const above = Buffer.concat([k, Buffer.from([0])]);
    const nextIsAbove = i + 1 < n && model[i + 1][0].equals(above);
    if (!nextIsAbove) {
      assert.equal(t.find(above), undefined);
      assert.equal(t.rank(above), i + 1);
      assert.equal(t.lowerBound(above).ordinal, i + 1);
    }
    if (i + 1 < n) {
      assert.equal(s.next(), true);
      assert.equal(hex(s.key), hex(model[i + 1][0]));
      assert.equal(s.prev(), true);
      assert.equal(s.ordinal, i);
    }
    [s, f, up].forEach((x) => x.free());
  }
  assert.equal(t.select(n).valid, false);
  assert.equal(t.select(n + 1000).ordinal, n);
  assert.equal(t.rank(new Uint8Array([0xff])), n);
  // seek, first and last move an existing cursor.
  const m = t.select(5);
  assert.equal(m.seek('item/000100'), true);
  assert.equal(Buffer.from(m.key).toString(), 'item/000100');
  assert.equal(m.seek('zzz'), false);
  assert.equal(m.first(), true);
  assert.equal(m.ordinal, 0);
  assert.equal(m.last(), true);
  assert.equal(m.ordinal, n - 1);
  // A cursor's part of a large value.
  const big = t.find('large/b');
  assert.equal(big.valueLength, LARGE);
  assert.equal(hex(big.getRange(LARGE - 5, 10)), hex(model.find(([k]) => k.toString() === 'large/b')[1].subarray(LARGE - 5)));
});

/** The model's answer to range options (the rules of core/src/btree/range_request.rs). */
function modelRange(o) {
  const b = (k) => (k === undefined ? undefined : Buffer.from(k));
  const [gt, gte, lt, lte, prefix] = [b(o.gt), b(o.gte), b(o.lt), b(o.lte), b(o.prefix)];
  let out = model.filter(([k]) =>
    (gt === undefined || Buffer.compare(k, gt) > 0) &&
    (gte === undefined || Buffer.compare(k, gte) >= 0) &&
    (lt === undefined || Buffer.compare(k, lt) < 0) &&
    (lte === undefined || Buffer.compare(k, lte) <= 0) &&
    (prefix === undefined || k.subarray(0, prefix.length).equals(prefix)));
  if (o.reverse) out = out.reverse();
  out = out.slice(o.offset ?? 0);
  return o.limit === undefined ? out : out.slice(0, o.limit);
}

test('range, keys and prefix against the model; paging by offset or by the last key', () => {
  const t = Bitable.fromBytes(readFileSync(path));
  const requests = [
    {},
    { reverse: true },
    { prefix: 'item/0001' },
    { prefix: 'item/0001', reverse: true, offset: 3, limit: 5 },
    { prefix: 'a' },
    { prefix: '' },
    { prefix: new Uint8Array([0xff]) },
    { gte: 'item/000500', lt: 'item/000510' },
    { gt: 'item/000500', lte: 'item/000510', reverse: true },
    { gt: 'item/000510', lt: 'item/000500' },
    { gte: 'a', lte: 'a' },
    { gt: 'a', lte: 'a' },
    { offset: 19990 },
    { offset: 5, reverse: true, limit: 3 },
    { offset: 100000 },
    { offset: 100000, reverse: true },
    { limit: 0 },
    { gte: 'item/', prefix: 'item/00199', offset: 2 },
    { lt: 'item/000003', reverse: true, offset: 2 },
    { lt: 'item/000003', reverse: true, offset: 12 },
    { gt: 'large/', offset: 1, limit: 2 },
    // An offset that lands past the bound on the far side: nothing.
    { gte: 'item/000500', lt: 'item/000510', offset: 8 },
    { gte: 'item/000500', lt: 'item/000510', offset: 12 },
    { gte: 'item/000500', lt: 'item/000510', reverse: true, offset: 8 },
    { gte: 'item/000500', lt: 'item/000510', reverse: true, offset: 12 },
  ];
  for (const o of requests) {
    const want = modelRange(o);
    const got = t.range(o).toArray();
    assert.deepEqual(keysOf(got), keysOf(want), JSON.stringify(o));
    assert.deepEqual(got.map(([, v]) => hex(v)), want.map(([, v]) => hex(v)), JSON.stringify(o));
    assert.deepEqual(t.keys(o).toArray().map(hex), keysOf(want), JSON.stringify(o));
    // Iterable again, from the start.
    const r = t.keys(o);
    assert.deepEqual([...r].map(hex), [...r].map(hex));
    if (o.prefix !== undefined) {
      const { prefix, ...rest } = o;
      assert.deepEqual(keysOf(t.prefix(prefix, rest).toArray()), keysOf(want), JSON.stringify(o));
    }
  }
  // Pages of 1000: by offset, and by the last key seen, both ways.
  for (const reverse of [false, true]) {
    const byOffset = [];
    for (let offset = 0; ; offset += 1000) {
      const page = t.keys({ reverse, offset, limit: 1000 }).toArray();
      byOffset.push(...page.map(hex));
      if (page.length < 1000) break;
    }
    const byKey = [];
    let lastKey;
    for (;;) {
      const from = lastKey === undefined ? {} : reverse ? { lt: lastKey } : { gt: lastKey };
      const page = t.keys({ ...from, reverse, limit: 1000 }).toArray();
      if (page.length === 0) break;
      byKey.push(...page.map(hex));
      lastKey = page[page.length - 1];
    }
    const want = keysOf(reverse ? [...model].reverse() : model);
    assert.deepEqual(byOffset, want);
    assert.deepEqual(byKey, want);
  }
  // The options are checked as Store.range() checks them.
  assertBaleError(() => t.range({ start: 'a' }), 'INVALID_ARGUMENT', /unknown range option "start"/);
  assertBaleError(() => t.range({ gt: 'a', gte: 'b' }), 'INVALID_ARGUMENT');
  assertBaleError(() => t.keys({ limit: -1 }), 'INVALID_ARGUMENT');
  assertBaleError(() => t.range({ reverse: 1 }), 'INVALID_ARGUMENT');
  assertBaleError(() => t.prefix('a', { prefix: 'b' }), 'INVALID_ARGUMENT', /prefix once/);
  assertBaleError(() => t.prefix(5), 'INVALID_ARGUMENT');
});

test('an offset far into the table is found by rank, not by walking', () => {
  const t = Bitable.fromBytes(readFileSync(path));
  const { depth, pageSize, leafPages } = t.stats();
  t.resetCounters();
  const [k] = t.keys({ offset: 15000, limit: 1 }).toArray();
  assert.equal(hex(k), hex(model[15000][0]));
  const [r] = t.keys({ reverse: true, offset: 15000, limit: 1 }).toArray();
  assert.equal(hex(r), hex(model[model.length - 1 - 15000][0]));
  // Each: a select and a seek down the tree (a path of `depth` pages,
  // the leaf read again by its cursor), and at most one leaf more.
  assert.ok(t.bytesRead <= 2 * (2 * (depth + 1) + 1) * pageSize, `${t.bytesRead} bytes`);
  assert.ok(t.bytesRead * 10 < leafPages * pageSize, `${t.bytesRead} bytes, ${leafPages} leaves`);
});

test('values above maxValueBytes are TOO_LARGE whole and readable in parts', () => {
  const t = Bitable.fromBytes(readFileSync(path), { maxValueBytes: 1 << 20 });
  assert.equal(t.maxValueBytes, 1 << 20);
  const want = model.find(([k]) => k.toString() === 'large/b')[1];
  assertBaleError(() => t.get('large/b'), 'TOO_LARGE', /getRange/);
  assertBaleError(() => t.find('large/b').value, 'TOO_LARGE');
  assertBaleError(() => t.range({ prefix: 'large/' }).toArray(), 'TOO_LARGE');
  assert.equal(t.keys({ prefix: 'large/' }).toArray().length, 4);
  assert.equal(t.valueLength('large/b'), LARGE);
  assert.equal(hex(t.get('large/a')), hex(model.find(([k]) => k.toString() === 'large/a')[1]));
  const parts = [];
  for (let off = 0; off < LARGE; off += 1 << 20) parts.push(t.getRange('large/b', off, 1 << 20));
  assert.equal(hex(Buffer.concat(parts)), hex(want));
  // A part reads the blocks that hold it, not the value.
  const h = openLazy(path, { chunkBytes: 4096 });
  try {
    h.table.resetCounters();
    assert.equal(hex(h.table.getRange('large/b', 1_000_000, 100)), hex(want.subarray(1_000_000, 1_000_100)));
    assert.ok(h.table.bytesRead < 3 * 65536, `${h.table.bytesRead} bytes`);
  } finally {
    h.close();
  }
  // The limit is checked.
  assertBaleError(() => Bitable.fromBytes(readFileSync(path), { maxValueBytes: 2 ** 32 }), 'INVALID_ARGUMENT');
  assertBaleError(() => Bitable.fromBytes(readFileSync(path), { maxValueBytes: -1 }), 'INVALID_ARGUMENT');
  assertBaleError(() => Bitable.fromBytes(readFileSync(path), { maxValue: 1 }), 'INVALID_ARGUMENT', /unknown open option/);
  assertBaleError(() => Bitable.fromReader(10, () => new Uint8Array(10), { cacheBytes: 'lots' }), 'INVALID_ARGUMENT');
});

test('stats and check agree with the native CLI', () => {
  const t = Bitable.fromBytes(readFileSync(path));
  const s = t.stats();
  const cli = JSON.parse(bale(['--json', 'bitable', 'stat', path]));
  const camel = (name) => name.replace(/_([a-z])/g, (_, c) => c.toUpperCase());
  for (const [name, v] of Object.entries(cli).filter(([name]) => name !== 'table')) {
    assert.deepEqual(s[camel(name)], v, name);
  }
  assert.equal(s.formatVersion, 1);
  assert.equal(s.fileBytes, readFileSync(path).length);
  assert.equal(s.largeValues, 3);
  const calls = [];
  const report = t.check((done, total) => calls.push([done, total]));
  assert.deepEqual(report, {
    ok: true,
    pagesChecked: s.leafPages + s.branchPages,
    entriesChecked: model.length,
    largeValuesChecked: 3,
    problemCount: 0,
    problems: [],
  });
  // Progress now and then, and at the end every page.
  assert.ok(calls.length >= 2, `${calls.length} calls`);
  assert.deepEqual(calls[calls.length - 1], [report.pagesChecked, report.pagesChecked]);
  assert.equal(t.check().ok, true);
  // What the progress function throws, check throws (once the walk is over).
  let called = 0;
  assert.throws(() => t.check(() => {
    called++;
    throw new RangeError('stop');
  }), (e) => e instanceof RangeError && e.message === 'stop');
  assert.equal(called, 1);
  assertBaleError(() => t.check(42), 'INVALID_ARGUMENT', /progress function/);
});

test('damaged tables: the code of the first error, the page, and check reports', () => {
  const good = readFileSync(path);
  const t = Bitable.fromBytes(good);
  const { pageSize, fileBytes, valueRegionBytes } = t.stats();
  // One bit of leaf page 5: its keys fail with the page, the others read.
  const leaf = Buffer.from(good);
  leaf[5 * pageSize + 100] ^= 1;
  const bad = Bitable.fromBytes(leaf);
  const codes = new Map();
  for (const [k] of model) {
    try {
      bad.get(k);
      codes.set('read', (codes.get('read') ?? 0) + 1);
    } catch (e) {
      assert.equal(e.name, 'BaleError');
      assert.equal(e.page, 5);
      codes.set(e.code, (codes.get(e.code) ?? 0) + 1);
    }
  }
  assert.deepEqual([...codes.keys()].sort(), ['CHECKSUM_MISMATCH', 'read']);
  assert.ok(codes.get('read') > model.length / 2);
  // A scan stops at it, and the iteration is over.
  const it = bad.keys()[Symbol.iterator]();
  assertBaleError(() => {
    for (;;) if (it.next().done) break;
  }, 'CHECKSUM_MISMATCH');
  assert.equal(it.next().done, true);
  const report = bad.check();
  assert.equal(report.ok, false);
  assert.equal(report.problems[0].page, 5);
  assert.equal(report.problems[0].code, 'CHECKSUM_MISMATCH');
  assert.equal(report.problemCount, report.problems.length);
  // One bit of the first large value's first block: that block fails, the
  // value's other blocks, and its length, still read.
  const block = Buffer.from(good);
  block[fileBytes - valueRegionBytes + 10] ^= 1;
  const damaged = Bitable.fromBytes(block);
  const a = model.find(([k]) => k.toString() === 'large/a')[1];
  assertBaleError(() => damaged.get('large/a'), 'CHECKSUM_MISMATCH');
  assertBaleError(() => damaged.getRange('large/a', 0, 10), 'CHECKSUM_MISMATCH');
  assert.equal(hex(damaged.getRange('large/a', 70000, 10)), hex(a.subarray(70000, 70010)));
  assert.equal(damaged.valueLength('large/a'), a.length);
  assert.equal(damaged.check().problems[0].code, 'CHECKSUM_MISMATCH');
  // Cut short, not a bitable, or a tree store: refused at open.
  assertBaleError(() => Bitable.fromBytes(good.subarray(0, good.length - 100)), 'CORRUPT');
  assertBaleError(() => Bitable.fromBytes(new Uint8Array(0)), 'NOT_A_BALE_FILE');
  const tree = manifest.cases.find((c) => c.id === 'one-key');
  assertBaleError(() => Bitable.fromBytes(readFileSync(join(CORPUS, tree.file))), 'INVALID_ARGUMENT', /tree store file, not a bitable/);
  // The read callback: a throw is IO, a short read a truncated file.
  assertBaleError(() => Bitable.fromReader(good.length, () => {
    throw new Error('disk on fire');
  }), 'IO', /disk on fire/);
  assertBaleError(() => Bitable.fromReader(good.length, (o, n) => good.subarray(o, o + Math.min(n, 100))), 'CORRUPT');
});

test('arguments of the wrong kind are INVALID_ARGUMENT; Blobs need a Web Worker', () => {
  const b = readFileSync(caseFile('bitable-small'));
  assertBaleError(() => Bitable.fromBytes(), 'INVALID_ARGUMENT', /Bitable.fromBytes\(\) takes/);
  assertBaleError(() => Bitable.fromBytes('bitable'), 'INVALID_ARGUMENT');
  assertBaleError(() => Bitable.fromBlob(b), 'INVALID_ARGUMENT', /Bitable.fromBlob\(\) takes a Blob or a File/);
  assertBaleError(() => Bitable.fromBlob(new Blob([b])), 'INVALID_ARGUMENT', /Web Worker/);
  assertBaleError(() => Bitable.fromReader(10, 5), 'INVALID_ARGUMENT', /read function/);
  assertBaleError(() => Bitable.fromReader(-1, () => new Uint8Array()), 'INVALID_ARGUMENT');
  const t = Bitable.fromBytes(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
  assert.equal(t.count, expected(bitableCase('bitable-small')).count);
  for (const call of [() => t.get(42), () => t.has({}), () => t.rank(null), () => t.lowerBound(1), () => t.find()]) {
    assertBaleError(call, 'INVALID_ARGUMENT');
  }
  for (const n of [-1, 1.5, NaN, Infinity]) assertBaleError(() => t.select(n), 'INVALID_ARGUMENT');
  assertBaleError(() => t.getRange('a', -1, 1), 'INVALID_ARGUMENT');
  assertBaleError(() => t.getRange(t.first().key, 0, 2 ** 33), 'TOO_LARGE');
});

test('counters: bytes and reads fetched, the chunk cache, reset', () => {
  const h = openLazy(path, { chunkBytes: 4096, cacheBytes: 1 << 20 });
  try {
    const t = h.table;
    assert.equal(t.fileBytes, readFileSync(path).length);
    assert.ok(t.bytesRead > 0 && t.readCount > 0);
    t.resetCounters();
    assert.equal(t.bytesRead, 0);
    assert.equal(t.readCount, 0);
    assert.equal(t.cacheStats().requests, 0);
    t.get('item/000001');
    const once = t.bytesRead;
    assert.ok(once > 0);
    // The same lookup again comes from the cache.
    t.get('item/000001');
    assert.equal(t.bytesRead, once);
    const cs = t.cacheStats();
    assert.equal(cs.chunkBytes, 4096);
    assert.equal(cs.capacityBytes, 1 << 20);
    assert.ok(cs.hits > 0 && cs.requests > cs.hits);
  } finally {
    h.close();
  }
  assert.equal(Bitable.fromBytes(readFileSync(path)).cacheStats(), undefined);
});

test('close: the table, its cursors and its ranges throw CLOSED', () => {
  const t = Bitable.fromBytes(readFileSync(path));
  const c = t.first();
  const r = t.range();
  const it = r[Symbol.iterator]();
  assert.equal(it.next().done, false);
  assert.equal(t.closed, false);
  t.close();
  t.close();
  assert.equal(t.closed, true);
  for (const call of [
    () => t.get('a'), () => t.count, () => t.first(), () => t.range(), () => t.stats(), () => t.check(),
    () => t.formatVersion, () => c.key, () => c.next(), () => it.next(), () => [...r],
  ]) {
    assertBaleError(call, 'CLOSED');
  }
  // Counters stay readable.
  assert.equal(typeof t.bytesRead, 'number');
});

test('the range rules are Store.range()\'s: the tree cases\' range queries on bitables exported from them', async () => {
  const queriesOf = (c) => JSON.parse(readFileSync(join(CORPUS, c.queries), 'utf8'));
  const withQueries = manifest.cases.filter((c) => c.queries);
  const total = withQueries.reduce((n, c) => n + queriesOf(c).queries.length, 0);
  assert.ok(total > 0, 'no range queries in the corpus');
  const exported = new Map();
  for (const c of withQueries) {
    const copy = join(dir, `${c.id}.bale`);
    copyFileSync(join(CORPUS, c.file), copy);
    const out = join(dir, `${c.id}.bitable`);
    bale(['bitable', 'export', copy, out]);
    exported.set(c.id, readFileSync(out));
  }
  const results = await runQueries(manifest, (c) => Bitable.fromBytes(exported.get(c.id)), queriesOf, expected);
  assert.equal(results.length, total);
  assert.deepEqual(results.filter((r) => !r.ok).map((r) => `${r.id}: ${r.detail}`), []);
  // And the exported tables hold what the stores hold.
  for (const c of withQueries) {
    const t = Bitable.fromBytes(exported.get(c.id));
    const entries = t.range().toArray().map(([k, v]) => [hex(k), hex(v)]);
    assert.equal(canonical(entries), canonical(expected(c).entries), c.id);
  }
});
