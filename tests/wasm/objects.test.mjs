// The read-only ObjectStore of the wasm package in Node: the golden
// corpus's object store cases (directory stores from their files read into
// Uint8Arrays, single-file stores from their bytes), the API on a corpus
// store, and the ways of handing over files that are refused. The lazy
// Blob path needs FileReaderSync, so it runs in Chromium
// (tests/browser/chromium.test.mjs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { ObjectStore } from '../../bindings/wasm/js/node.js';
import { runObjectCorpus } from './corpus.js';
import { CORPUS, assertBaleError, caseBytes, expected, hex, manifest } from './helpers.mjs';

const objectCase = (id) => manifest.object_cases.find((c) => c.id === id);
/** The files of a directory case, relative path -> bytes. */
const caseFiles = (c) => new Map(c.files.map((f) => [f, readFileSync(join(CORPUS, c.file, f))]));
const open = (c) => (c.single_file ? ObjectStore.fromBytes(readFileSync(join(CORPUS, c.file))) : ObjectStore.fromFiles(caseFiles(c)));

test('corpus: every object store case from Uint8Arrays', async () => {
  const results = await runObjectCorpus(manifest, open, expected);
  assert.equal(results.length, manifest.object_cases.length);
  assert.ok(results.length >= 15, `only ${results.length} object store cases`);
  assert.deepEqual(results.filter((r) => !r.ok).map((r) => `${r.id}: ${r.detail}`), []);
  assert.ok(results.filter((r) => r.kind === 'valid').length >= 5);
  assert.ok(results.filter((r) => r.kind === 'invalid').length >= 10);
  // Every file counts what is read from it: a valid case read something.
  for (const r of results.filter((r) => r.kind === 'valid')) assert.ok(r.bytesRead > 0, r.id);
});

test('corpus: a directory store from a plain object of ArrayBuffers reads the same', async () => {
  for (const id of ['objects-blake3', 'objects-sha256', 'objects-sha1']) {
    const c = objectCase(id);
    const files = {};
    for (const [name, b] of caseFiles(c)) files[`./${name}`] = b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength);
    const [r] = await runObjectCorpus({ object_cases: [c] }, () => ObjectStore.fromFiles(files), expected);
    assert.equal(r.ok, true, `${id}: ${r.detail}`);
  }
});

test('ids, has, get, getRange, meta, stats and validate', () => {
  const c = objectCase('objects-blake3');
  const want = expected(c);
  const s = open(c);
  assert.equal(s.hash, 'blake3');
  assert.equal(s.singleFile, false);
  assert.equal(s.formatVersion, want.format_version);
  assert.equal(s.fileBytes, [...caseFiles(c).values()].reduce((n, b) => n + b.length, 0));
  assert.deepEqual(s.ids(), want.objects.map(([id]) => id));
  const contents = new Map(want.objects);
  for (const [id, content] of want.objects) {
    const bytes = Buffer.from(content, 'hex');
    assert.equal(s.has(id), true);
    // Hex in either case, or the id's raw bytes.
    assert.equal(hex(s.get(id)), content);
    assert.equal(hex(s.get(id.toUpperCase(), { verify: true })), content);
    assert.equal(hex(s.get(Buffer.from(id, 'hex'), { verify: false })), content);
    const m = s.meta(id);
    assert.deepEqual(Object.keys(m).sort(), ['chunked', 'compressed', 'id', 'packed', 'size', 'storedSize']);
    assert.equal(m.id, id);
    assert.equal(m.size, bytes.length);
    for (const [off, len] of [[0, 10], [1, 3000], [Math.max(0, bytes.length - 2), 10], [bytes.length + 5, 4], [0, 0]]) {
      assert.equal(hex(s.getRange(id, off, len)), hex(bytes.subarray(off, off + len)), `${id} ${off}+${len}`);
    }
  }
  const metas = want.objects.map(([id]) => s.meta(id));
  // The case stages some objects, packs others, and chunks and compresses some.
  for (const flag of ['chunked', 'packed', 'compressed']) {
    assert.ok(metas.some((m) => m[flag]) && metas.some((m) => !m[flag]), flag);
  }
  const st = s.stats();
  assert.deepEqual(Object.keys(st).sort(), [
    'chunkedObjects', 'chunks', 'compressedRecords', 'logicalBytes', 'objects', 'packBytes', 'packs', 'records',
    'stagedRecords', 'storedBytes', 'uniqueBytes',
  ]);
  assert.equal(st.objects, want.count);
  assert.equal(st.logicalBytes, [...contents.values()].reduce((n, v) => n + v.length / 2, 0));
  assert.equal(st.chunkedObjects, metas.filter((m) => m.chunked).length);
  assert.ok(st.chunks > 0 && st.stagedRecords > 0 && st.compressedRecords > 0);
  assert.ok(st.uniqueBytes > 0 && st.uniqueBytes <= st.logicalBytes);
  assert.equal(st.packs, 1);
  assert.equal(st.packBytes, caseFiles(c).get('packs/0.pack').length);
  const v = s.validate();
  assert.deepEqual(v, { ok: true, objectsChecked: want.count, recordsChecked: st.records, bytesChecked: v.bytesChecked, problems: [] });
  assert.ok(v.bytesChecked >= st.logicalBytes);
  assert.equal(s.validate({ sample: 0 }).recordsChecked, 0);
  // A missing object, and a deleted one, are NOT_FOUND.
  const missing = '00'.repeat(32);
  assert.equal(s.has(missing), false);
  for (const call of [() => s.get(missing), () => s.meta(missing), () => s.getRange(missing, 0, 1)]) {
    assertBaleError(call, 'NOT_FOUND');
  }
  // Counters: what was fetched from the files, summed.
  assert.ok(s.bytesRead > 0 && s.readCount > 0);
  s.resetCounters();
  assert.equal(s.bytesRead, 0);
  assert.equal(s.readCount, 0);
  s.get(want.objects[0][0]);
  assert.ok(s.bytesRead > 0);
  // Closing.
  s.close();
  s.close();
  assert.equal(s.closed, true);
  for (const call of [() => s.ids(), () => s.get(missing), () => s.stats(), () => s.hash, () => s.singleFile]) {
    assertBaleError(call, 'CLOSED');
  }
});

test('a single-file store from bytes', () => {
  const c = objectCase('objects-file-sha1');
  const want = expected(c);
  const b = readFileSync(join(CORPUS, c.file));
  const s = ObjectStore.fromBytes(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
  assert.equal(s.singleFile, true);
  assert.equal(s.hash, 'sha1');
  assert.equal(s.fileBytes, b.length);
  assert.deepEqual(s.ids(), want.objects.map(([id]) => id));
  assert.equal(s.validate().ok, true);
  assert.ok(s.meta(want.objects[0][0]).packed);
  assert.equal(s.stats().packs, 0);
  // A SHA-1 id is 20 bytes.
  assertBaleError(() => s.get('ab'.repeat(32)), 'INVALID_ARGUMENT', /40 hex digits/);
  assertBaleError(() => s.get(new Uint8Array(32)), 'INVALID_ARGUMENT', /20 bytes/);
});

test('damage: reads throw the code, validate reports the problem', () => {
  const s = open(objectCase('objects-pack-payload-flip'));
  const v = s.validate();
  assert.equal(v.ok, false);
  assert.ok(v.problems.length > 0);
  assert.equal(v.problems[0].code, 'CHECKSUM_MISMATCH');
  assert.match(v.problems[0].id, /^[0-9a-f]{64}$/);
  assert.match(v.problems[0].file, /^packs\/\d+\.pack$/);
  assert.equal(typeof v.problems[0].message, 'string');
  // The damaged record may be a chunk: some object's read fails on it.
  const codes = s.ids().map((id) => {
    try {
      s.get(id, { verify: true });
      return 'read';
    } catch (e) {
      return e.code;
    }
  });
  assert.ok(codes.includes('CHECKSUM_MISMATCH') && codes.includes('read'), codes.join());
});

test('arguments of the wrong kind are INVALID_ARGUMENT', () => {
  const c = objectCase('objects-blake3');
  const files = caseFiles(c);
  for (const bad of [undefined, 42, 'dir', new Uint8Array(4), () => {}]) {
    assertBaleError(() => ObjectStore.fromFiles(bad), 'INVALID_ARGUMENT', /fromFiles\(\) takes/);
  }
  assertBaleError(() => ObjectStore.fromFiles(new Map([[1, new Uint8Array()]])), 'INVALID_ARGUMENT', /keys of the Map/);
  assertBaleError(() => ObjectStore.fromFiles({ config: 'text' }), 'INVALID_ARGUMENT', /"config" must be a Blob/);
  assertBaleError(() => ObjectStore.fromFiles({ '../config': new Uint8Array() }), 'INVALID_ARGUMENT', /cannot go up/);
  assertBaleError(() => ObjectStore.fromFiles({ './': new Uint8Array() }), 'INVALID_ARGUMENT', /not the relative path/);
  assertBaleError(() => ObjectStore.fromFiles({ config: files.get('config'), './config': files.get('config') }), 'INVALID_ARGUMENT', /given twice/);
  assertBaleError(() => ObjectStore.fromFiles(files, { chunkBytes: 3 }), 'INVALID_ARGUMENT');
  assertBaleError(() => ObjectStore.fromFiles(files, { chunk: 4096 }), 'INVALID_ARGUMENT', /unknown open option/);
  // Blobs are read with FileReaderSync, which only Web Workers have.
  assertBaleError(() => ObjectStore.fromFiles({ config: new Blob([files.get('config')]) }), 'INVALID_ARGUMENT', /Web Worker/);
  assertBaleError(() => ObjectStore.fromBlob(new Blob([new Uint8Array(4096)])), 'INVALID_ARGUMENT', /Web Worker/);
  assertBaleError(() => ObjectStore.fromBlob(files.get('config')), 'INVALID_ARGUMENT', /fromBlob\(\) takes a Blob/);
  assertBaleError(() => ObjectStore.fromBytes('bytes'), 'INVALID_ARGUMENT', /fromBytes\(\) takes/);
  // Files from a directory picker: each path starts with the directory's name.
  const file = (path) => Object.defineProperty(new File([], path.split('/').at(-1)), 'webkitRelativePath', { value: path });
  assertBaleError(() => ObjectStore.fromFiles([new File([], 'config')]), 'INVALID_ARGUMENT', /config: a File without a webkitRelativePath/);
  assertBaleError(() => ObjectStore.fromFiles([file('a/config'), file('b/index')]), 'INVALID_ARGUMENT', /more than one directory \("a" and "b"\)/);
  // Past the paths, a File is a Blob: Node cannot read it synchronously.
  assertBaleError(() => ObjectStore.fromFiles([file('store/config'), file('store/packs/0.pack')]), 'INVALID_ARGUMENT', /Web Worker/);
  // Ids, and options of get and validate.
  const s = ObjectStore.fromFiles(files);
  const id = s.ids()[0];
  assertBaleError(() => s.get(42), 'INVALID_ARGUMENT', /hex string or a Uint8Array of its 32 bytes/);
  assertBaleError(() => s.has('xyz'), 'INVALID_ARGUMENT', /not an object id/);
  assertBaleError(() => s.get(id, { verify: 'yes' }), 'INVALID_ARGUMENT', /verify must be a boolean/);
  assertBaleError(() => s.get(id, { verified: true }), 'INVALID_ARGUMENT', /unknown get option "verified"/);
  assertBaleError(() => s.getRange(id, -1, 1), 'INVALID_ARGUMENT');
  assertBaleError(() => s.getRange(id, 0, 2 ** 33), 'TOO_LARGE');
  assertBaleError(() => s.validate({ sample: 101 }), 'INVALID_ARGUMENT', /percentage/);
  assertBaleError(() => s.validate({ sample: '5' }), 'INVALID_ARGUMENT', /sample must be a number/);
});

test('what is not an object store is refused with its code', () => {
  // No files at all, and files without a config.
  assertBaleError(() => ObjectStore.fromFiles(new Map()), 'NOT_FOUND', /no object store/);
  assertBaleError(() => ObjectStore.fromFiles({ 'notes.txt': new Uint8Array(3) }), 'NOT_FOUND', /not an object store/);
  // A tree store that holds no object store, and bytes that are no store.
  assertBaleError(() => ObjectStore.fromBytes(caseBytes('one-key')), 'INVALID_ARGUMENT', /no object store/);
  assertBaleError(() => ObjectStore.fromBytes(new Uint8Array(0)), 'NOT_A_BALE_FILE');
});
