// Store.check(options): the page map (each page's kind and fill) against
// stat() on stores built here, progress calls, a damaged page shown as bad,
// and the checking of the options.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { Store } from '../../bindings/wasm/js/node.js';
import { assertBaleError, noise } from './helpers.mjs';

const KIND_NAMES = [
  'header', 'meta', 'leaf', 'branch', 'freeList', 'valueIndex', 'valueBlock', 'free', 'unreachable', 'bad',
];
const KIND = Object.fromEntries(KIND_NAMES.map((n, i) => [n, i]));

const key = (i) => `key${String(i).padStart(6, '0')}`;

/** A writable store with small and large values, deletes and four commits. */
function mixedStore() {
  const s = Store.create();
  for (let i = 0; i < 4000; i++) s.put(key(i), 'v'.repeat(60));
  s.commit();
  s.put('big-a', noise(300001, 1));
  s.put('big-b', noise(70000, 2));
  s.put('big-c', 'z'.repeat(200000));
  s.put('big-d', noise(150000, 3));
  // Hundreds of pages read block by block: progress moves meanwhile.
  s.put('big-e', noise(2000000, 4));
  s.commit();
  for (let i = 0; i < 4000; i += 3) assert.equal(s.delete(key(i)), true);
  assert.equal(s.delete('big-d'), true);
  s.commit();
  for (let i = 4000; i < 4400; i++) s.put(key(i), noise(300, i));
  s.commit();
  return s;
}

/** check() with a page map, recording the progress calls. */
function mapped(s) {
  const calls = [];
  const report = s.check({ pageMap: true, onProgress: (done, total) => calls.push([done, total]) });
  return { report, map: report.pageMap, calls };
}

/**
 * Progress starts at 0, never goes back and ends at done == total; on a
 * sound store it comes at least every 256 pages (plus a value block's 17).
 */
function assertProgress(calls, pages, sound) {
  assert.ok(calls.length >= 2, JSON.stringify(calls));
  assert.deepEqual(calls[0], [0, pages]);
  assert.deepEqual(calls.at(-1), [pages, pages]);
  let prev = 0;
  for (const [done, total] of calls) {
    assert.equal(total, pages);
    assert.ok(done >= prev && done <= total, `progress went from ${prev} to ${done} of ${total}`);
    assert.ok(!sound || done - prev < 256 + 17, `progress jumped from ${prev} to ${done}`);
    prev = done;
  }
}

/** Pages of each kind, counted from the kind bytes. */
function tally(kinds) {
  const n = new Array(KIND_NAMES.length).fill(0);
  for (const k of kinds) {
    assert.ok(k < KIND_NAMES.length, `kind ${k}`);
    n[k]++;
  }
  return Object.fromEntries(KIND_NAMES.map((name, i) => [name, n[i]]));
}

test('the page map agrees with stat() and its fills with the page kinds', () => {
  const s = mixedStore();
  const st = s.stat();
  assert.ok(st.freePages > 0 && st.freeListPages > 0 && st.branchPages > 0 && st.largeValues === 4, JSON.stringify(st));
  const { report, map, calls } = mapped(s);
  assert.equal(report.ok, true, JSON.stringify(report.problems));
  assert.equal(report.pages, st.filePages);
  assert.ok(map.kinds instanceof Uint8Array && map.fill instanceof Uint8Array);
  assert.equal(map.kinds.length, st.filePages);
  assert.equal(map.fill.length, st.filePages);
  assert.deepEqual(map.kindNames, KIND_NAMES);
  assert.deepEqual(map.counts, tally(map.kinds));
  const c = map.counts;
  assert.deepEqual([c.header, c.meta, c.unreachable, c.bad], [1, 2, 0, 0]);
  assert.equal(c.leaf, st.leafPages);
  assert.equal(c.branch, st.branchPages);
  assert.equal(c.free, st.freePages);
  assert.equal(c.freeList, st.freeListPages);
  assert.equal(c.valueIndex + c.valueBlock, st.largePages);
  assert.ok(c.valueIndex >= 3);
  assert.equal(Object.values(c).reduce((a, b) => a + b), st.filePages);
  assert.ok(st.filePages > 600, `${st.filePages} pages`);
  assertProgress(calls, st.filePages, true);
  assert.ok(calls.length >= 4, JSON.stringify(calls));

  let partial = 0;
  for (let p = 0; p < map.kinds.length; p++) {
    const [kind, fill] = [KIND_NAMES[map.kinds[p]], map.fill[p]];
    if (kind === 'header' || kind === 'meta') assert.equal(fill, 255, `page ${p}`);
    else if (kind === 'free') assert.equal(fill, 0, `page ${p}`);
    else assert.ok(fill > 0, `${kind} page ${p} has fill 0`);
    if (kind === 'valueBlock' && fill < 128) partial++;
  }
  assert.ok(partial > 0, 'no partly filled last page of a block');

  // The same bytes opened read-only give the same map.
  const again = Store.fromBytes(s.toBytes()).check({ pageMap: true }).pageMap;
  assert.deepEqual(again.kinds, map.kinds);
  assert.deepEqual(again.fill, map.fill);
});

test('check() without a page map is as before', () => {
  const s = mixedStore();
  const plain = s.check();
  assert.deepEqual(Object.keys(plain), [
    'ok', 'txn', 'pages', 'entries', 'largeValues', 'freePages', 'metaSlot', 'problems',
  ]);
  assert.equal(plain.ok, true);
  for (const options of [undefined, null, {}, { pageMap: false }, { pageMap: null, onProgress: undefined }]) {
    assert.deepEqual(s.check(options), plain, JSON.stringify(options));
  }
  // Progress alone.
  let last;
  assert.deepEqual(s.check({ onProgress: (d, t) => (last = [d, t]) }), plain);
  assert.deepEqual(last, [plain.pages, plain.pages]);
});

test('check options are checked', () => {
  const s = mixedStore();
  assertBaleError(() => s.check({ pagemap: true }), 'INVALID_ARGUMENT', /unknown check option "pagemap"/);
  assertBaleError(() => s.check({ pageMap: true, progress: () => {} }), 'INVALID_ARGUMENT', /onProgress, pageMap/);
  assertBaleError(() => s.check({ onProgress: 5 }), 'INVALID_ARGUMENT', /onProgress must be a function/);
  assertBaleError(() => s.check({ pageMap: 'yes' }), 'INVALID_ARGUMENT', /pageMap must be a boolean/);
  assertBaleError(() => s.check({ pageMap: 1 }), 'INVALID_ARGUMENT', /pageMap must be a boolean/);
  for (const bad of [42, 'pageMap', () => {}, new Uint8Array(1)]) {
    assertBaleError(() => s.check(bad), 'INVALID_ARGUMENT', /check options must be an object/);
  }
  s.close();
  assertBaleError(() => s.check({ pageMap: true }), 'CLOSED');
});

test('what onProgress throws is thrown once the check is over', () => {
  const s = mixedStore();
  const boom = new Error('stop');
  let calls = 0;
  assert.throws(
    () =>
      s.check({
        pageMap: true,
        onProgress: () => {
          calls++;
          throw boom;
        },
      }),
    (e) => e === boom,
  );
  assert.equal(calls, 1);
  // The store is unharmed.
  assert.equal(s.check().ok, true);
});

test('a damaged leaf shows as bad, and the check still reports', () => {
  const s = mixedStore();
  const bytes = s.toBytes();
  const { map: clean } = mapped(Store.fromBytes(bytes));
  const leaves = [...clean.kinds.keys()].filter((p) => clean.kinds[p] === KIND.leaf);
  const victim = leaves[leaves.length >> 1];
  bytes[victim * s.pageSize + 100] ^= 0xff;
  const { report, map, calls } = mapped(Store.fromBytes(bytes));
  assert.equal(report.ok, false);
  assert.ok(report.problems.some((p) => p.page === victim), JSON.stringify(report.problems));
  assert.equal(map.kinds[victim], KIND.bad);
  assert.equal(map.counts.bad, 1);
  assert.equal(map.counts.leaf, clean.counts.leaf - 1);
  assert.deepEqual(map.counts, tally(map.kinds));
  assertProgress(calls, report.pages, false);
});
