// Store.estimate(options): the sampled overview against stat() on stores
// built here, its options, a damaged page, and the bytes it reads of a
// ~4.5 GiB store read lazily (open + estimate well under 1 MiB).
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { Store } from '../../bindings/wasm/js/node.js';
import { BIG_KEY, BIG_LEN, SMALL_KEYS, makeBigStore } from './big-store.mjs';
import { assertBaleError, noise, openLazy } from './helpers.mjs';

const FIELDS = [
  'txn', 'pageSize', 'entries', 'depth', 'rootFanout', 'samples', 'leavesSampled', 'pagesRead',
  'leafPages', 'branchPages', 'leafFill', 'avgKeyLen', 'avgInlineValueLen', 'largeShare',
  'avgLargeValueLen', 'inlineValueBytes', 'largeValues', 'largeValueBytes',
];

/** `got` within `share` of `want`. */
function near(what, got, want, share) {
  assert.ok(Math.abs(got - want) <= share * Math.abs(want), `${what}: estimated ${got}, exact ${want}`);
}

/** Every field that must be exact is, and the depth bounds the pages read. */
function assertExact(e, st, samples) {
  assert.deepEqual(Object.keys(e), FIELDS);
  assert.equal(e.txn, st.txn);
  assert.equal(e.pageSize, st.pageSize);
  assert.equal(e.entries, st.entries);
  assert.equal(e.depth, st.depth);
  assert.equal(e.samples, samples);
  assert.ok(e.pagesRead >= e.depth && e.pagesRead <= 1 + samples * (e.depth - 1), `${e.pagesRead} pages read`);
}

/** 30000 sorted keys of 11 bytes with 100-byte values: three levels. */
function bulkStore() {
  const s = Store.create();
  for (let i = 0; i < 30000; i++) s.put(`key${String(i).padStart(8, '0')}`, 'v'.repeat(100));
  s.commit();
  return s;
}

/** Small values and one in eight large, with deletes over two commits. */
function mixedStore() {
  const s = Store.create();
  for (let i = 0; i < 6000; i++) {
    const n = i % 8 === 3 ? 1100 + ((i * 7919) % 9000) : (i * 31) % 120;
    s.put(`item/${String(i).padStart(6, '0')}`, noise(n, i + 1));
  }
  s.commit();
  for (let i = 0; i < 6000; i += 5) assert.equal(s.delete(`item/${String(i).padStart(6, '0')}`), true);
  s.commit();
  return s;
}

test('estimate() agrees with stat() on a bulk-loaded store', () => {
  const s = bulkStore();
  const st = s.stat();
  assert.equal(st.depth, 3);
  for (const seed of [0, 1, 2]) {
    const e = s.estimate({ seed });
    assertExact(e, st, 64);
    // Below the root: as many branches as the root has children.
    assert.equal(e.rootFanout, st.branchPages - 1);
    assert.equal(e.branchPages, st.branchPages);
    near('leaf pages', e.leafPages, st.leafPages, 0.05);
    // stat's fill counts the few branches too.
    assert.ok(Math.abs(e.leafFill - st.fill) < 0.04, `leaf fill ${e.leafFill}, stat ${st.fill}`);
    assert.equal(e.avgKeyLen, 11);
    assert.equal(e.avgInlineValueLen, 100);
    assert.equal(e.inlineValueBytes, st.inlineValueBytes);
    assert.deepEqual([e.largeShare, e.largeValues, e.largeValueBytes, e.avgLargeValueLen], [0, 0, 0, 0]);
  }
});

test('estimate() agrees with stat() on a store of small and large values after deletes', () => {
  const s = mixedStore();
  const st = s.stat();
  assert.ok(st.largeValues > 500 && st.freePages > 0, JSON.stringify(st));
  for (const [samples, share] of [[64, 0.1], [256, 0.06]]) {
    const e = s.estimate({ samples, seed: 9 });
    assertExact(e, st, samples);
    near(`leaf pages (${samples})`, e.leafPages, st.leafPages, share);
    assert.ok(Math.abs(e.leafFill - st.fill) < 0.05, `leaf fill ${e.leafFill}, stat ${st.fill}`);
    near(`large values (${samples})`, e.largeValues, st.largeValues, share);
    near(`large share (${samples})`, e.largeShare, st.largeValues / st.entries, share);
    near(`large value bytes (${samples})`, e.largeValueBytes, st.largeValueBytes, share);
    near(`mean large value length (${samples})`, e.avgLargeValueLen, st.largeValueBytes / st.largeValues, share);
    near(`inline value bytes (${samples})`, e.inlineValueBytes, st.inlineValueBytes, share);
    near(
      `mean inline value length (${samples})`,
      e.avgInlineValueLen,
      st.inlineValueBytes / (st.entries - st.largeValues),
      share,
    );
    assert.equal(e.avgKeyLen, 11);
  }
});

test('the same seed gives the same estimate; the defaults are 64 samples and seed 0', () => {
  const s = bulkStore();
  const a = s.estimate({ samples: 100, seed: 77 });
  assert.deepEqual(s.estimate({ samples: 100, seed: 77 }), a);
  assert.notDeepEqual(s.estimate({ samples: 100, seed: 78 }), a);
  const plain = s.estimate();
  for (const options of [undefined, null, {}, { samples: 64 }, { seed: 0 }, { samples: undefined, seed: null }]) {
    assert.deepEqual(s.estimate(options), plain, JSON.stringify(options));
  }
  // The bytes opened read-only give the same estimate.
  assert.deepEqual(Store.fromBytes(s.toBytes()).estimate(), plain);
});

test('an empty store and a one-leaf store', () => {
  const s = Store.create();
  const e = s.estimate();
  assert.deepEqual(Object.keys(e), FIELDS);
  for (const f of FIELDS) assert.equal(e[f], f === 'pageSize' ? 4096 : 0, f);
  s.put('a', 'xy');
  s.put('bcd', 'z');
  s.commit();
  const one = s.estimate({ samples: 1 });
  assert.deepEqual(
    [one.depth, one.rootFanout, one.pagesRead, one.leafPages, one.branchPages, one.entries],
    [1, 0, 1, 1, 0, 2],
  );
  assert.equal(one.avgKeyLen, 2);
  assert.equal(one.avgInlineValueLen, 1.5);
  assert.equal(one.leafFill, s.stat().fill);
});

test('estimate options are checked', () => {
  const s = bulkStore();
  for (const bad of [{ sample: 10 }, { samples: 64, depth: 2 }]) {
    assertBaleError(() => s.estimate(bad), 'INVALID_ARGUMENT', /unknown estimate option/);
  }
  for (const samples of [0, 4097, -1, 1.5, '64', true]) {
    assertBaleError(() => s.estimate({ samples }), 'INVALID_ARGUMENT', /samples/);
  }
  for (const seed of [-1, 0.5, 'x', 2 ** 64]) {
    assertBaleError(() => s.estimate({ seed }), 'INVALID_ARGUMENT', /seed/);
  }
  for (const options of [5, 'samples', [64], new Uint8Array(2)]) {
    assertBaleError(() => s.estimate(options), 'INVALID_ARGUMENT');
  }
  assert.equal(s.estimate({ samples: 4096 }).samples, 4096);
  s.close();
  assertBaleError(() => s.estimate(), 'CLOSED');
});

test('a damaged leaf on a descent throws its error with the page', () => {
  const s = Store.create();
  for (let i = 0; i < 2000; i++) s.put(`key${String(i).padStart(5, '0')}`, 'v'.repeat(40));
  s.commit();
  const { kinds } = s.check({ pageMap: true }).pageMap;
  const leaves = [...kinds.keys()].filter((p) => kinds[p] === 2);
  assert.ok(leaves.length > 20 && leaves.length < 60, `${leaves.length} leaves`);
  const victim = leaves[leaves.length >> 1];
  const bytes = s.toBytes();
  bytes[victim * 4096 + 100] ^= 0xff;
  // 4096 descents reach every one of a few dozen leaves.
  const e = assertBaleError(() => Store.fromBytes(bytes).estimate({ samples: 4096 }), 'CHECKSUM_MISMATCH');
  assert.equal(e.page, victim);
});

test('a ~4.5 GiB store read lazily: open + estimate read well under 1 MiB', async () => {
  const big = await makeBigStore();
  try {
    const { store, close } = openLazy(big.path);
    try {
      const e = store.estimate();
      const read = store.bytesRead;
      console.log(
        `4.5 GiB store (${store.fileBytes} bytes): open + estimate() read ${read} bytes in ${store.readCount} reads, ` +
          `${e.pagesRead} pages`,
      );
      assert.ok(store.fileBytes > BIG_LEN);
      assert.ok(read < 1 << 20, `open + estimate read ${read} bytes`);
      assert.ok(e.pagesRead <= 1 + 64 * (e.depth - 1), `${e.pagesRead} pages`);
      assert.equal(e.entries, SMALL_KEYS + 1);
      // The big value's leaf, when a descent reached it, says its length;
      // its blocks are never read.
      if (e.largeValues > 0) assert.equal(e.avgLargeValueLen, BIG_LEN);
      const st = store.stat();
      assertExact(e, st, 64);
      near('leaf pages', e.leafPages, st.leafPages, 0.1);
      assert.equal(store.valueLength(BIG_KEY), BIG_LEN);
      store.close();
    } finally {
      close();
    }
  } finally {
    big.cleanup();
  }
});
