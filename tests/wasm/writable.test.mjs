// Writable stores in wasm memory (Store.create, Store.fromBytes with
// writable: true): transactions, reads that see the open transaction,
// iteration while writing, errors, and files that the native `bale` CLI of
// this workspace reads and writes in both directions.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { Store } from '../../bindings/wasm/js/node.js';
import { bale } from './cli.mjs';
import { assertBaleError, caseBytes, hex, noise } from './helpers.mjs';

const text = (b) => (b === undefined ? undefined : Buffer.from(b).toString());

let dir;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'bale-writable-'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

/** The store file at `path` as the CLI lists it: [[keyHex, valueHex]], and its check. */
function nativeRead(path) {
  const check = JSON.parse(bale(['--json', 'check', path]));
  const ls = JSON.parse(bale(['--json', 'kv', 'ls', '--values', path]));
  const entries = ls.entries.map((e) => [e.key_hex, e.value_hex ?? Buffer.from(e.value).toString('hex')]);
  return { check, entries };
}

/** Every entry of a store as [[keyHex, valueHex]]. */
const entriesOf = (s) => [...s.range()].map(([k, v]) => [hex(k), hex(v)]);
const modelEntries = (m) => [...m].map(([k, v]) => [Buffer.from(k).toString('hex'), hex(v)]).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

test('reads inside the open write transaction see its writes; commit and abort', () => {
  const s = Store.create();
  assert.equal(s.writable, true);
  assert.equal(s.inTransaction, false);
  assert.equal(s.count, 0);
  s.put('b', 'two');
  s.put(new TextEncoder().encode('a'), new Uint8Array([1, 2, 3]));
  const big = noise(200000, 7);
  s.put('big', big);
  assert.equal(s.inTransaction, true);
  // Every read sees the uncommitted writes.
  assert.equal(text(s.get('b')), 'two');
  assert.equal(s.has('a'), true);
  assert.equal(s.count, 3);
  assert.equal(s.valueLength('big'), big.length);
  assert.equal(hex(s.getRange('big', 70000, 100)), hex(big.subarray(70000, 70100)));
  assert.deepEqual(s.keys().toArray().map(text), ['a', 'b', 'big']);
  assert.deepEqual([...s.keys({ gt: 'a', reverse: true })].map(text), ['big', 'b']);
  assert.equal(hex(s.range({ prefix: 'bi' }).toArray()[0][1]), hex(big));
  // stat and check describe the last commit: still empty.
  assert.equal(s.stat().entries, 0);
  s.commit();
  assert.equal(s.inTransaction, false);
  assert.equal(s.count, 3);
  assert.equal(s.stat().entries, 3);
  assert.equal(s.check().ok, true);
  // Abort throws the transaction's changes away.
  assert.equal(s.delete('b'), true);
  assert.equal(s.delete('never there'), false);
  s.put('c', 'three');
  assert.equal(s.get('b'), undefined);
  assert.deepEqual(s.keys().toArray().map(text), ['a', 'big', 'c']);
  s.abort();
  assert.equal(s.inTransaction, false);
  assert.deepEqual(s.keys().toArray().map(text), ['a', 'b', 'big']);
  // commit() and abort() with nothing open do nothing.
  s.commit();
  s.abort();
  assert.equal(s.count, 3);
});

test('toBytes() is the last commit as a store file; fileBytes is its length', () => {
  const s = Store.create({ pageSize: 16384 });
  assert.equal(s.pageSize, 16384);
  s.put('k', 'v');
  assertBaleError(() => s.toBytes(), 'INVALID_ARGUMENT', /commit\(\) or abort\(\)/);
  s.commit();
  const bytes = s.toBytes();
  assert.ok(bytes instanceof Uint8Array);
  assert.equal(bytes.length, s.fileBytes);
  assert.equal(bytes.length % 16384, 0);
  // Large values of an aborted transaction do not lengthen the export.
  s.put('big', noise(300000, 3));
  s.abort();
  assert.equal(s.toBytes().length, bytes.length);
  const back = Store.fromBytes(bytes);
  assert.equal(back.writable, false);
  assert.equal(text(back.get('k')), 'v');
  assert.equal(back.stat().fileBytes, bytes.length);
});

test('a store made in WebAssembly opens with the native CLI, contents intact', () => {
  const s = Store.create();
  const model = new Map();
  const put = (k, v) => {
    s.put(k, v);
    model.set(k, typeof v === 'string' ? new TextEncoder().encode(v) : v);
  };
  for (let i = 0; i < 3000; i++) put(`item/${String(i).padStart(5, '0')}`, `value ${i}`);
  put('blob/large', noise(1 << 20, 11));
  put('blob/compressible', new Uint8Array(300000).fill(65));
  s.commit();
  // A second commit that deletes and overwrites, so free pages are reused.
  for (let i = 0; i < 3000; i += 3) {
    s.delete(`item/${String(i).padStart(5, '0')}`);
    model.delete(`item/${String(i).padStart(5, '0')}`);
  }
  put('item/00001', 'changed');
  s.commit();
  const path = join(dir, 'from-wasm.bale');
  writeFileSync(path, s.toBytes());
  const got = nativeRead(path);
  assert.equal(got.check.ok, true, JSON.stringify(got.check.problems));
  assert.equal(got.check.entries, model.size);
  assert.deepEqual(got.entries, modelEntries(model));
  // Values stream out of the native reader byte for byte.
  assert.equal(hex(bale(['kv', 'get', path, 'blob/large'])), hex(model.get('blob/large')));
});

test('a store made natively is loaded, changed and exported, and the CLI reads the change', () => {
  const path = join(dir, 'native.bale');
  const lines = [];
  for (let i = 0; i < 2000; i++) lines.push(`n/${String(i).padStart(4, '0')}\tnative ${i}\n`);
  bale(['kv', 'load', '--create', '--page-size', '8192', path], lines.join(''));
  const bigPath = join(dir, 'big.bin');
  const big = noise(500000, 5);
  writeFileSync(bigPath, big);
  bale(['kv', 'put', path, 'big', '--file', bigPath]);

  const s = Store.fromBytes(readFileSync(path), { writable: true });
  assert.equal(s.writable, true);
  assert.equal(s.pageSize, 8192);
  assert.equal(s.count, 2001);
  assert.equal(text(s.get('n/1234')), 'native 1234');
  assert.equal(hex(s.get('big')), hex(big));
  s.put('n/1234', 'changed in wasm');
  assert.equal(s.delete('big'), true);
  for (let i = 0; i < 500; i++) s.delete(`n/${String(i).padStart(4, '0')}`);
  s.put('wasm/new', noise(70000, 9));
  s.commit();
  const out = join(dir, 'changed.bale');
  writeFileSync(out, s.toBytes());
  const got = nativeRead(out);
  assert.equal(got.check.ok, true, JSON.stringify(got.check.problems));
  assert.equal(got.check.entries, 1501);
  const byKey = new Map(got.entries.map(([k, v]) => [Buffer.from(k, 'hex').toString(), v]));
  assert.equal(Buffer.from(byKey.get('n/1234'), 'hex').toString(), 'changed in wasm');
  assert.equal(byKey.has('big'), false);
  assert.equal(byKey.has('n/0499'), false);
  assert.equal(byKey.get('wasm/new'), hex(noise(70000, 9)));
  assert.deepEqual(got.entries, entriesOf(s));
  // And the native CLI can write to it again.
  bale(['kv', 'put', out, 'after', 'native']);
  assert.equal(text(Store.fromBytes(readFileSync(out)).get('after')), 'native');
});

test('iterating while writing: like a Map, deleted entries ahead are skipped, added ones seen', () => {
  const s = Store.create();
  const key = (i) => `k/${String(i).padStart(4, '0')}`;
  for (let i = 0; i < 1000; i++) s.put(key(i), `v${i}`);
  s.commit();
  // Delete every key while iterating (more than one batch of entries).
  let n = 0;
  for (const [k] of s.range()) {
    s.delete(k);
    n++;
  }
  assert.equal(n, 1000);
  assert.equal(s.count, 0);
  s.abort();
  // Changes ahead of the iteration are seen, behind it not.
  const seen = [];
  for (const k of s.keys()) {
    const name = text(k);
    seen.push(name);
    if (name === key(10)) {
      s.delete(key(11));
      s.delete(key(5));
      s.put(`${key(10)}+`, 'added ahead');
      s.put(`${key(2)}+`, 'added behind');
    }
    if (name === key(600)) s.commit();
    if (name === key(700)) {
      s.put(`${key(999)}+`, 'added at the end');
      s.abort();
    }
  }
  const want = [];
  for (let i = 0; i < 1000; i++) {
    if (i === 11) continue;
    want.push(key(i));
    if (i === 10) want.push(`${key(10)}+`);
  }
  assert.deepEqual(seen, want);
  // The commit at 600 kept the changes; the abort after 700 dropped the last put.
  assert.equal(s.has(`${key(2)}+`), true);
  assert.equal(s.has(`${key(999)}+`), false);
  // Offset and limit count what was yielded before a change.
  const t = Store.create();
  for (let i = 0; i < 10; i++) t.put(`a${i}`, '');
  const limited = [];
  for (const k of t.keys({ offset: 2, limit: 4 })) {
    limited.push(text(k));
    if (limited.length === 1) {
      t.delete('a3');
      t.delete('a4');
    }
  }
  assert.deepEqual(limited, ['a2', 'a5', 'a6', 'a7']);
});

test('errors a user can cause carry their code', () => {
  const ro = Store.fromBytes(caseBytes('one-key'));
  assert.equal(ro.writable, false);
  assert.equal(ro.inTransaction, false);
  for (const f of [() => ro.put('a', 'b'), () => ro.delete('a'), () => ro.commit(), () => ro.abort(), () => ro.toBytes()]) {
    assertBaleError(f, 'INVALID_ARGUMENT', /read-only/);
  }
  const s = Store.create();
  assertBaleError(() => s.put('a', 42), 'INVALID_ARGUMENT', /value must be/);
  assertBaleError(() => s.put({}, 'x'), 'INVALID_ARGUMENT', /key must be/);
  assertBaleError(() => s.put('k'.repeat(5000), 'x'), 'TOO_LARGE');
  assert.equal(s.inTransaction, true);
  assert.equal(s.count, 0);
  assertBaleError(() => Store.create({ pageSize: 1000 }), 'INVALID_ARGUMENT', /page size/);
  assertBaleError(() => Store.create({ pageSize: -1 }), 'INVALID_ARGUMENT');
  assertBaleError(() => Store.create({ page_size: 4096 }), 'INVALID_ARGUMENT', /unknown create option/);
  assertBaleError(() => Store.create('big'), 'INVALID_ARGUMENT');
  assertBaleError(() => Store.fromBytes(new Uint8Array(0), { writable: true }), 'NOT_A_BALE_FILE');
  assertBaleError(() => Store.fromBytes(caseBytes('wrong-magic'), { writable: true }), 'NOT_A_BALE_FILE');
  assertBaleError(() => Store.fromBytes(caseBytes('leaf-bit-flip'), { writable: true }).range().toArray(), 'CHECKSUM_MISMATCH');
  assertBaleError(() => Store.fromBytes(caseBytes('one-key'), { writable: 'yes' }), 'INVALID_ARGUMENT');
  assertBaleError(() => Store.fromBytes(caseBytes('one-key'), { writeable: true }), 'INVALID_ARGUMENT', /unknown open option "writeable"/);
  // Closing discards the open transaction; everything after throws CLOSED.
  s.put('a', 'b');
  const r = s.keys();
  const it = r[Symbol.iterator]();
  s.close();
  assert.equal(s.closed, true);
  for (const f of [() => s.put('a', 'b'), () => s.get('a'), () => s.commit(), () => s.toBytes(), () => s.count, () => it.next(), () => [...r]]) {
    assertBaleError(f, 'CLOSED');
  }
});
