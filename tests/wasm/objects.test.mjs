// The read-only ObjectStore of the wasm package in Node: the golden
// corpus's object store cases (directory stores from their files read into
// Uint8Arrays, single-file stores from their bytes), the API on a corpus
// store, the inspection API (overview, list pages, chunks, files) and what
// it reads of a store the CLI writes, and the ways of handing over files
// that are refused. The lazy
// Blob path needs FileReaderSync, so it runs in Chromium
// (tests/browser/chromium.test.mjs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { ObjectStore } from '../../bindings/wasm/js/node.js';
import { bale } from './cli.mjs';
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
  assert.deepEqual(v, { ok: true, objectsChecked: want.count, recordsChecked: st.records, bytesChecked: v.bytesChecked, unindexedRecords: 1, unindexedObjects: 1, problems: [] });
  // The one record no entry names: the object the case deleted after packing.
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

test('validate({ onProgress }): record bytes, rising, the last call complete; a throw comes out', () => {
  const s = open(objectCase('objects-blake3'));
  const calls = [];
  const report = s.validate({ onProgress: (done, total) => calls.push([done, total]) });
  assert.equal(report.ok, true);
  assert.ok(calls.length >= 2, JSON.stringify(calls));
  const total = calls[0][1];
  // The bytes of every record the index names, headers included.
  assert.equal(total, s.stats().storedBytes);
  assert.deepEqual(calls.at(-1), [total, total]);
  assert.ok(calls.every(([d, t], i) => t === total && (i === 0 || d > calls[i - 1][0])), JSON.stringify(calls));
  // A sample skips records: the bar still ends full.
  const sampled = [];
  s.validate({ sample: 0, onProgress: (d, t) => sampled.push([d, t]) });
  assert.deepEqual(sampled.at(-1), [total, total]);
  // What the callback throws is thrown once the check is over; it is not
  // called again.
  let n = 0;
  const stop = new Error('stop');
  assert.throws(() => s.validate({ onProgress: () => { n += 1; throw stop; } }), (e) => e === stop);
  assert.equal(n, 1);
  assertBaleError(() => s.validate({ onProgress: 'bar' }), 'INVALID_ARGUMENT', /onProgress must be a function/);
  assertBaleError(() => s.validate({ progress: () => {} }), 'INVALID_ARGUMENT', /unknown validate option "progress"/);
  s.close();
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
  // URLs are read with XMLHttpRequest, which Node lacks: refused, nothing sent.
  assertBaleError(() => ObjectStore.fromUrl('http://127.0.0.1:9/store/'), 'INVALID_ARGUMENT', /needs XMLHttpRequest/);
  assertBaleError(() => ObjectStore.fromUrl('http://127.0.0.1:9/store.bale'), 'INVALID_ARGUMENT', /needs XMLHttpRequest/);
  assertBaleError(() => ObjectStore.fromUrl('http://127.0.0.1:9/store/', { chunkBytes: 3 }), 'INVALID_ARGUMENT', /chunk size 3/);
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

/** Every page of `list` with `limit` in one direction, joined. */
function allPages(s, limit, reverse) {
  const out = [];
  for (;;) {
    const page = s.list({ after: out.at(-1)?.id, limit, reverse });
    assert.ok(page.length <= limit);
    out.push(...page);
    if (page.length < limit) return out;
  }
}

for (const id of ['objects-sha256', 'objects-file-sha1']) {
  test(`inspection of ${id}: overview, list pages, chunks and files`, () => {
    const c = objectCase(id);
    const s = open(c);
    const hashName = c.id.endsWith('sha1') ? 'sha1' : 'sha256';
    const st = s.stats();
    const ov = s.overview();
    assert.deepEqual(Object.keys(ov).sort(), [
      'chunkAvg', 'chunkMax', 'chunkMin', 'compression', 'fanout', 'formatVersion', 'hash', 'indexBytes', 'indexKeys',
      'packBytes', 'packTarget', 'packs', 'records', 'singleFile', 'stagingBytes', 'stagingFiles', 'storeId',
    ]);
    assert.equal(ov.hash, hashName);
    assert.equal(ov.singleFile, c.single_file);
    assert.equal(ov.formatVersion, s.formatVersion);
    assert.equal(ov.compression, 'auto');
    assert.ok(ov.chunkMin <= ov.chunkAvg && ov.chunkAvg <= ov.chunkMax && ov.fanout >= 16 && ov.packTarget >= 1 << 20);
    assert.match(ov.storeId, /^[0-9a-f]{32}$/);
    assert.equal(ov.records, st.records);
    assert.equal(ov.packs, st.packs);
    assert.equal(ov.packBytes, st.packBytes);
    const given = c.single_file ? null : caseFiles(c);
    assert.equal(ov.indexBytes, c.single_file ? s.fileBytes : given.get('index').length);
    assert.equal(ov.indexKeys, c.single_file ? 2 * st.records + 1 : st.records + st.packs);
    const staging = c.single_file ? [] : c.files.filter((f) => f.startsWith('staging/'));
    assert.equal(ov.stagingFiles, staging.length);
    assert.equal(ov.stagingBytes, staging.reduce((n, f) => n + given.get(f).length, 0));

    // Pages, forward and backward, are ids() with no repeat or gap.
    const ids = s.ids();
    for (const limit of [1, 7, 100]) {
      assert.deepEqual(allPages(s, limit, false).map((m) => m.id), ids, `limit ${limit}`);
      assert.deepEqual(allPages(s, limit, true).map((m) => m.id), [...ids].reverse(), `limit ${limit}, reverse`);
    }
    assert.deepEqual(s.list(), ids.slice(0, 100).map((id) => s.meta(id)));
    assert.deepEqual(s.list({ after: Buffer.from(ids[1], 'hex'), limit: 2 }).map((m) => m.id), ids.slice(2, 4));
    assert.deepEqual(s.list({ after: ids[3].toUpperCase(), reverse: true, limit: 10 }).map((m) => m.id), ids.slice(0, 3).reverse());
    // An id that is not stored starts the page at the next one.
    assert.deepEqual(s.list({ after: '00'.repeat(ids[0].length / 2) }).map((m) => m.id), ids);
    assert.deepEqual(s.list({ limit: 0 }), []);
    assert.deepEqual(s.list({ after: undefined, limit: null, reverse: undefined }).length, ids.length);

    // Chunks: contiguous, adding up to the object, each the hash of its bytes.
    const seen = new Map();
    for (const id of ids) {
      const m = s.meta(id);
      const chunks = s.chunks(id);
      let at = 0;
      for (const ch of chunks) {
        assert.deepEqual(Object.keys(ch).sort(), [
          'area', 'compressed', 'file', 'fileNumber', 'fileOffset', 'id', 'offset', 'size', 'storedSize',
        ]);
        assert.equal(ch.offset, at);
        const bytes = s.getRange(id, ch.offset, ch.size);
        assert.equal(createHash(hashName).update(bytes).digest('hex'), ch.id);
        if (c.single_file) {
          assert.deepEqual([ch.area, ch.file, ch.fileNumber, ch.fileOffset], ['inline', null, 0, 0]);
        } else {
          assert.ok(given.has(ch.file), ch.file);
          assert.equal(ch.area, ch.file.startsWith('packs/') ? 'pack' : 'staging');
          assert.ok(ch.fileOffset >= 64 && ch.fileOffset + ch.storedSize <= given.get(ch.file).length);
        }
        assert.equal(ch.compressed ? ch.storedSize < ch.size + 64 : ch.storedSize === ch.size + 64, true);
        if (seen.has(ch.id)) assert.deepEqual(seen.get(ch.id), ch.storedSize);
        seen.set(ch.id, ch.storedSize);
        at += ch.size;
      }
      assert.equal(at, m.size);
      if (!m.chunked) assert.deepEqual(chunks.map((ch) => [ch.id, ch.storedSize]), [[id, m.storedSize]]);
      else assert.ok(chunks.length > 1);
      // Pages of chunks, each from the end of the last, are the whole list.
      for (const limit of [1, 7]) {
        const paged = [];
        let offset = 0;
        do {
          const page = s.chunks(id, { offset, limit });
          assert.ok(page.length > 0 && page.length <= limit);
          paged.push(...page);
          offset = page.at(-1).offset + page.at(-1).size;
        } while (offset < m.size);
        assert.deepEqual(paged, chunks, `${id}, limit ${limit}`);
      }
      const mid = chunks[Math.floor(chunks.length / 2)];
      const rest = chunks.slice(Math.floor(chunks.length / 2));
      assert.deepEqual(s.chunks(id, { offset: mid.offset + Math.floor(mid.size / 2) }), rest);
      assert.deepEqual(s.chunks(id, { offset: m.size + 1, limit: 5 }), []);
      assert.deepEqual(s.chunks(id, { limit: 0 }), []);
    }
    assert.ok(ids.some((id) => s.meta(id).chunked));
    // Each content once: the unique bytes of stats() are the distinct chunks.
    const unique = [...new Set(ids.flatMap((id) => s.chunks(id).map((ch) => `${ch.id} ${ch.size}`)))];
    assert.equal(unique.reduce((n, k) => n + Number(k.split(' ')[1]), 0), st.uniqueBytes);
    assert.ok(st.uniqueBytes < st.logicalBytes);

    // Files: the live bytes are the stored bytes; progress ends at the records.
    const calls = [];
    const files = s.files({ onProgress: (done, total) => calls.push([done, total]) });
    assert.deepEqual(calls.at(-1), [st.records, st.records]);
    assert.equal(files.reduce((n, f) => n + f.liveBytes, 0), st.storedBytes);
    assert.equal(files.reduce((n, f) => n + f.liveRecords, 0), st.records);
    for (const f of files) {
      assert.deepEqual(Object.keys(f).sort(), ['area', 'committedBytes', 'file', 'fileBytes', 'liveBytes', 'liveRecords', 'number']);
      if (c.single_file) {
        assert.deepEqual([f.area, f.file, f.number, f.fileBytes, f.committedBytes], ['inline', null, 0, s.fileBytes, null]);
        continue;
      }
      assert.equal(f.fileBytes, given.get(f.file).length);
      assert.ok(f.liveBytes + 64 <= f.fileBytes);
      assert.equal(f.committedBytes, f.area === 'pack' ? f.fileBytes : null);
    }
    assert.deepEqual(s.files(), files);
    s.close();
    for (const call of [() => s.overview(), () => s.list(), () => s.chunks(ids[0]), () => s.files()]) {
      assertBaleError(call, 'CLOSED');
    }
  });
}

test('files: a pack only a deleted object used is all garbage; a pack not given has no size', () => {
  // objects-sha256: the objects are staged, and pack 0 holds only a
  // deleted object's record.
  const c = objectCase('objects-sha256');
  const pack = caseFiles(c).get('packs/0.pack');
  const files = open(c).files();
  assert.deepEqual(files.find((f) => f.file === 'packs/0.pack'), {
    area: 'pack', number: 0, file: 'packs/0.pack', fileBytes: pack.length, committedBytes: pack.length, liveRecords: 0, liveBytes: 0,
  });
  // objects-blake3 without its pack: the index still places records there.
  const b = objectCase('objects-blake3');
  const without = caseFiles(b);
  without.delete('packs/0.pack');
  const s = ObjectStore.fromFiles(without);
  const row = s.files().find((f) => f.file === 'packs/0.pack');
  assert.equal(row.fileBytes, null);
  assert.ok(row.liveRecords > 0 && row.committedBytes > 0);
  assert.equal(s.overview().packs, 1);
});

test('inspection arguments of the wrong kind are INVALID_ARGUMENT, a missing object NOT_FOUND', () => {
  const s = open(objectCase('objects-blake3'));
  const id = s.ids()[0];
  assertBaleError(() => s.list(5), 'INVALID_ARGUMENT', /list options must be an object/);
  assertBaleError(() => s.list({ limt: 5 }), 'INVALID_ARGUMENT', /unknown list option "limt"/);
  for (const limit of [-1, 1.5, '5', NaN]) assertBaleError(() => s.list({ limit }), 'INVALID_ARGUMENT', /limit/);
  assertBaleError(() => s.list({ reverse: 1 }), 'INVALID_ARGUMENT', /reverse must be a boolean/);
  assertBaleError(() => s.list({ after: 'xyz' }), 'INVALID_ARGUMENT', /not an object id/);
  assertBaleError(() => s.list({ after: new Uint8Array(20) }), 'INVALID_ARGUMENT', /32 bytes/);
  assertBaleError(() => s.list({ after: 7 }), 'INVALID_ARGUMENT', /hex string or a Uint8Array/);
  assertBaleError(() => s.chunks('ab'.repeat(20)), 'INVALID_ARGUMENT', /64 hex digits/);
  assertBaleError(() => s.chunks(undefined), 'INVALID_ARGUMENT');
  assertBaleError(() => s.chunks('00'.repeat(32)), 'NOT_FOUND');
  assertBaleError(() => s.chunks(id, 5), 'INVALID_ARGUMENT', /chunks options must be an object/);
  assertBaleError(() => s.chunks(id, { start: 0 }), 'INVALID_ARGUMENT', /unknown chunks option "start"/);
  assertBaleError(() => s.chunks(id, { offset: -1 }), 'INVALID_ARGUMENT', /offset/);
  assertBaleError(() => s.chunks(id, { limit: '3' }), 'INVALID_ARGUMENT', /limit/);
  // A chunk is not an object.
  const chunked = s.ids().find((i) => s.meta(i).chunked);
  assertBaleError(() => s.chunks(s.chunks(chunked)[1].id), 'NOT_FOUND');
  assertBaleError(() => s.files(5), 'INVALID_ARGUMENT', /files options must be an object/);
  assertBaleError(() => s.files({ onProgress: 5 }), 'INVALID_ARGUMENT', /onProgress must be a function/);
  assertBaleError(() => s.files({ progress: () => {} }), 'INVALID_ARGUMENT', /unknown files option "progress"/);
  // What the progress callback throws is thrown once the walk is over; it
  // is called once, then not again.
  const boom = new Error('stop');
  let calls = 0;
  assert.throws(() => s.files({ onProgress: () => { calls += 1; throw boom; } }), (e) => e === boom);
  assert.equal(calls, 1);
  assert.equal(s.chunks(id).length, 1);
});

test('overview and one list page of a 20,000-object store read a few pages, not the index', () => {
  const dir = mkdtempSync(join(tmpdir(), 'bale-objinspect-'));
  try {
    const src = join(dir, 'src');
    for (let d = 0; d < 20; d++) {
      mkdirSync(join(src, String(d)), { recursive: true });
      for (let i = 0; i < 1000; i++) writeFileSync(join(src, String(d), String(i)), `object ${d}/${i}`);
    }
    const store = join(dir, 'store');
    bale(['obj', 'init', store]);
    bale(['obj', 'add', store, src]);
    const files = new Map();
    const walk = (sub) => {
      for (const e of readdirSync(join(store, sub), { withFileTypes: true })) {
        const rel = sub ? `${sub}/${e.name}` : e.name;
        if (e.isDirectory()) walk(rel);
        else files.set(rel, readFileSync(join(store, rel)));
      }
    };
    walk('');
    const s = ObjectStore.fromFiles(files);
    const index = files.get('index').length;
    assert.ok(index > 1 << 20, `an index of ${index} bytes`);
    const reads = (f) => {
      s.resetCounters();
      const out = f();
      return [out, s.bytesRead];
    };
    const [ov, ovRead] = reads(() => s.overview());
    assert.equal(ov.records, 20000);
    const [page, pageRead] = reads(() => s.list({ limit: 100 }));
    assert.equal(page.length, 100);
    const [next, nextRead] = reads(() => s.list({ after: page.at(-1).id, limit: 100 }));
    const [last, lastRead] = reads(() => s.list({ limit: 100, reverse: true }));
    const [chunks, chunksRead] = reads(() => s.chunks(page[0].id));
    assert.equal(chunks.length, 1);
    for (const [what, n] of [['overview', ovRead], ['a page', pageRead], ['the next page', nextRead], ['the last page', lastRead], ['chunks', chunksRead]]) {
      assert.ok(n > 0 && n * 50 < index, `${what} read ${n} bytes of an index of ${index}`);
    }
    // The pages agree with ids(), which reads every entry.
    const [ids, idsRead] = reads(() => s.ids());
    assert.ok(idsRead * 2 > index);
    assert.deepEqual(page.map((m) => m.id), ids.slice(0, 100));
    assert.deepEqual(next.map((m) => m.id), ids.slice(100, 200));
    assert.deepEqual(last.map((m) => m.id), ids.slice(-100).reverse());
    s.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
