// RemoteObjects of the wasm package in Node: a remote (the folders that
// `bale-corpus remote-fixture` writes, see make/wasm.mk) served over HTTP
// on 127.0.0.1 by the shared range server, which refuses HEAD and records
// every request. Opening, listing, every object byte for byte, ranges
// across chunk and pack boundaries, per-key presigned URLs through a
// resolver, what crossed the network, and the errors of damaged, missing
// and unreadable remotes. And every remote case of the golden corpus
// (tests/corpus, `remote_cases`), each folder served the same way.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { RemoteObjects } from '../../bindings/wasm/js/node.js';
import { startRangeServer } from '../browser/range-server.mjs';
import { runRemoteCorpus } from './corpus.js';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const TARGET = process.env.CARGO_TARGET_DIR ? resolve(REPO, process.env.CARGO_TARGET_DIR) : join(REPO, 'target');
const FIXTURE = process.env.REMOTE_FIXTURE ? resolve(process.env.REMOTE_FIXTURE) : join(TARGET, 'remote-fixture');
const CORPUS = process.env.CORPUS_DIR ? resolve(process.env.CORPUS_DIR) : join(REPO, 'tests/corpus');
// A missing fixture fails the run.
assert.ok(existsSync(join(FIXTURE, 'expected.json')), `${FIXTURE} is missing: run make test-wasm (it writes the fixture)`);
const expected = JSON.parse(readFileSync(join(FIXTURE, 'expected.json'), 'utf8'));
const byId = new Map(expected.objects.map((o) => [o.id, o]));
const big = expected.objects.find((o) => o.size === 2_100_000);

const sha256 = (b) => createHash('sha256').update(b).digest('hex');
const hex = (b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');
// The signature the server wants for a path under /signed/.
const sig = (path) => sha256(`secret ${path}`).slice(0, 16);

// Every request the server heard, in order.
const heard = [];
let server;
let base;

before(async () => {
  server = await startRangeServer(
    (path) => {
      for (const p of ['/remote-fixture/', '/signed/', '/token/']) if (path.startsWith(p)) return [p, FIXTURE];
      if (path.startsWith('/corpus/')) return ['/corpus/', CORPUS];
      return undefined;
    },
    (r) => heard.push(r),
    {
      refuseHead: true,
      // /signed/ wants each path's own signature, /token/ one token for all.
      authorize: (path, q) =>
        path.startsWith('/signed/') ? q.get('sig') === sig(path) : path.startsWith('/token/') ? q.get('token') === 'abc' : true,
    },
  );
  base = server.base;
});

after(() => server?.close());

/** What the server heard while `f` ran: the requests, and body bytes sent. */
async function served(f) {
  const from = heard.length;
  const value = await f();
  const requests = heard.slice(from);
  return { value, requests, bytes: requests.reduce((n, r) => n + r.bytes, 0) };
}

/** The rejection of `promise`, checked to be a BaleError with `code`. */
async function rejects(promise, code, re) {
  let thrown;
  try {
    await promise;
  } catch (e) {
    thrown = e;
  }
  assert.ok(thrown !== undefined, `expected a ${code} rejection`);
  assert.ok(thrown instanceof Error, `rejected with a non-Error: ${String(thrown)}`);
  assert.equal(thrown.name, 'BaleError');
  assert.equal(thrown.code, code, thrown.message);
  assert.ok(thrown.message.startsWith(`${code}: `), thrown.message);
  if (re) assert.match(thrown.message, re);
  return thrown;
}

const fileSize = (rel) => statSync(join(FIXTURE, rel)).size;
const packFiles = (dir, ext) => readdirSync(join(FIXTURE, dir, 'packs')).filter((f) => f.endsWith(ext));

let shared;
/** The remote opened once by its base URL, for the tests that only read. */
const remote = async () => (shared ??= await RemoteObjects.fromUrl(`${base}/remote-fixture/remote/`));

test('open: the manifest and every pack index, once, by GET; the counts they give', async () => {
  const { value: r, requests, bytes } = await served(() => RemoteObjects.fromUrl(`${base}/remote-fixture/remote/`));
  assert.equal(r.generation, expected.generation);
  assert.equal(r.hash, expected.hash);
  assert.equal(r.packCount, expected.packs);
  assert.equal(r.objectCount, expected.objects.length);
  assert.equal(packFiles('remote', '.idx').length, expected.packs);
  // What was fetched: the manifest, then each index whole, nothing else.
  const paths = requests.map((q) => `${q.method} ${q.status} ${q.path}`);
  assert.equal(paths[0], 'GET 200 /remote-fixture/remote/manifest');
  assert.deepEqual(paths.slice(1).sort(), packFiles('remote', '.idx').map((f) => `GET 200 /remote-fixture/remote/packs/${f}`).sort());
  assert.ok(requests.every((q) => q.range === null));
  assert.equal(bytes, fileSize('remote/manifest') + packFiles('remote', '.idx').reduce((n, f) => n + fileSize(`remote/packs/${f}`), 0));
  assert.deepEqual(r.traffic(), { requests: requests.length, bytesReceived: bytes });
  r.close();
  assert.equal(r.closed, true);
  assert.throws(() => r.has(big.id), (e) => e.code === 'CLOSED');
  await rejects(r.get(big.id), 'CLOSED');
});

test('list, has and size: every object in id order, in pages, from memory', async () => {
  const r = await remote();
  const { value: all, requests } = await served(() => r.list({ limit: 1000 }));
  assert.equal(requests.length, 0, 'listing sends no request');
  assert.deepEqual(all.map((o) => o.id), expected.objects.map((o) => o.id));
  assert.deepEqual([...all.map((o) => o.id)].sort(), all.map((o) => o.id));
  for (const o of all) {
    const e = byId.get(o.id);
    assert.equal(o.size, e.size, o.id);
    assert.equal(o.chunked, e.chunks !== undefined, o.id);
    assert.equal(r.has(o.id), true);
    assert.equal(r.has(Buffer.from(o.id, 'hex')), true);
    assert.equal(r.size(o.id.toUpperCase()), e.size);
  }
  // Pages: after the last id of one page comes the next.
  const pages = [];
  let after;
  for (;;) {
    const page = r.list({ after, limit: 5 });
    if (page.length === 0) break;
    assert.ok(page.length <= 5);
    pages.push(...page.map((o) => o.id));
    after = page.at(-1).id;
  }
  assert.deepEqual(pages, all.map((o) => o.id));
  assert.equal(r.list().length, Math.min(100, all.length));
  assert.deepEqual(r.list({ reverse: true, limit: 3 }).map((o) => o.id), all.slice(-3).reverse().map((o) => o.id));
  assert.deepEqual(r.list({ after: all[5].id, reverse: true }).map((o) => o.id), all.slice(0, 5).reverse().map((o) => o.id));
  assert.deepEqual(r.list({ limit: 0 }), []);
  const absent = 'ab'.repeat(32);
  assert.equal(r.has(absent), false);
  assert.throws(() => r.size(absent), (e) => e.code === 'NOT_FOUND' && /is not in/.test(e.message));
  assert.throws(() => r.list({ from: all[0].id }), (e) => e.code === 'INVALID_ARGUMENT' && /unknown list option "from"/.test(e.message));
  assert.throws(() => r.list({ limit: -1 }), (e) => e.code === 'INVALID_ARGUMENT');
  assert.throws(() => r.has('xyz'), (e) => e.code === 'INVALID_ARGUMENT');
  assert.throws(() => r.has(42), (e) => e.code === 'INVALID_ARGUMENT');
});

test('get: every object byte for byte, verified, by range reads only', async () => {
  const r = await remote();
  const { value: got, requests } = await served(() => Promise.all(expected.objects.map((o) => r.get(o.id))));
  for (const [i, o] of expected.objects.entries()) {
    assert.ok(got[i] instanceof Uint8Array);
    assert.equal(got[i].length, o.size, o.id);
    assert.equal(sha256(got[i]), o.sha256, o.id);
    if (o.content !== undefined) assert.equal(hex(got[i]), o.content, o.id);
  }
  assert.ok(requests.length > 0);
  for (const q of requests) {
    assert.equal(`${q.method} ${q.status}`, 'GET 206', JSON.stringify(q));
    assert.match(q.path, /^\/remote-fixture\/remote\/packs\/[0-9a-f]{64}\.pack$/);
    assert.match(q.range, /^bytes=\d+-\d+$/);
  }
  await rejects(r.get('ab'.repeat(32)), 'NOT_FOUND', /is not in http:\/\/127\.0\.0\.1:\d+\/remote-fixture\/remote/);
  await rejects(r.get('not hex'), 'INVALID_ARGUMENT');
});

test('getRange: from the start, the middle, across chunk and pack boundaries, and past the end', async () => {
  const r = await remote();
  for (const o of expected.objects) {
    const whole = await r.get(o.id);
    const n = o.size;
    const cases = [[0, 100], [Math.floor(n / 2), 1000], [Math.max(0, n - 5), 100], [n, 10], [n + 1000, 10], [3, 0], [0, n]];
    // Each chunk boundary (every seventh), straddled; and a chunk exactly.
    for (const [offset, size] of (o.chunks ?? []).filter((_, i) => i % 7 === 1)) {
      cases.push([offset - 10, 20], [offset, size]);
    }
    // Far more than one chunk, so surely across several.
    if (o.chunks) cases.push([1000, Math.min(n - 1000, 300_000)]);
    for (const [offset, length] of cases) {
      const got = await r.getRange(o.id, offset, length);
      const want = whole.subarray(Math.min(offset, n), Math.min(offset + length, n));
      assert.ok(got instanceof Uint8Array);
      assert.equal(got.length, want.length, `${o.id} at ${offset} for ${length}`);
      assert.ok(Buffer.from(got).equals(Buffer.from(want)), `${o.id} at ${offset} for ${length}`);
    }
  }
  assert.ok(big.chunks.length > 100, `${big.chunks.length} chunks`);
  await rejects(r.getRange(big.id, -1, 10), 'INVALID_ARGUMENT');
  await rejects(r.getRange(big.id, 0, 1.5), 'INVALID_ARGUMENT');
  await rejects(r.getRange(big.id, 0, 2 ** 33), 'TOO_LARGE');
});

test('a range of 100 bytes of the 2 MB object transfers a small part of it', async () => {
  const r = await remote();
  const before = r.traffic();
  const { value: got, requests, bytes } = await served(() => r.getRange(big.id, 1_234_567, 100));
  assert.equal(got.length, 100);
  const after = r.traffic();
  assert.deepEqual([after.requests - before.requests, after.bytesReceived - before.bytesReceived], [requests.length, bytes]);
  console.log(`getRange of 100 bytes of a ${big.size}-byte object: ${requests.length} requests, ${bytes} bytes`);
  // One record per level of the object: the root, its lists, one chunk.
  assert.ok(requests.length >= 2 && requests.length <= 5, `${requests.length} requests`);
  assert.ok(bytes < 64 * 1024 && bytes * 20 < big.size, `${bytes} bytes sent for 100`);
  const whole = await r.get(big.id);
  assert.ok(Buffer.from(got).equals(Buffer.from(whole.subarray(1_234_567, 1_234_667))));
  // Reading the whole object moves about its size (its records, lists
  // and headers), no more than once.
  const { bytes: wholeBytes } = await served(() => r.get(big.id));
  assert.ok(wholeBytes >= big.size && wholeBytes < big.size * 1.1, `${wholeBytes} bytes for ${big.size}`);
});

test('presigned URLs: a resolver gives each key its own URL; a base URL may carry one query for all', async () => {
  const keys = [];
  const resolver = (key) => {
    keys.push(key);
    const path = `/signed/remote/${key}`;
    return `${base}${path}?sig=${sig(path)}`;
  };
  const { value: r, requests } = await served(() => RemoteObjects.fromResolver(resolver));
  assert.equal(r.objectCount, expected.objects.length);
  assert.ok(requests.every((q) => q.status === 200 && q.query === `?sig=${sig(q.path)}`), JSON.stringify(requests));
  assert.ok(keys.includes('manifest') && keys.filter((k) => k.endsWith('.idx')).length === expected.packs, JSON.stringify(keys));
  const { value: data, requests: reads } = await served(() => r.get(big.id));
  assert.equal(sha256(data), big.sha256);
  assert.ok(reads.every((q) => q.status === 206 && q.query === `?sig=${sig(q.path)}`));
  assert.ok(keys.some((k) => /^packs\/[0-9a-f]{64}\.pack$/.test(k)));
  // Messages name the remote by the manifest's URL without its query.
  const e = await rejects(r.get('ab'.repeat(32)), 'NOT_FOUND');
  assert.match(e.message, /is not in http:\/\/127\.0\.0\.1:\d+\/signed\/remote$/);
  assert.doesNotMatch(e.message, /sig=/);

  // An asynchronous resolver (a presigning call), and URL objects.
  const later = async (key) => new URL(resolver(key));
  const r2 = await RemoteObjects.fromResolver(later);
  assert.equal(sha256(await r2.getRange(big.id, 0, big.size)), big.sha256);

  // One query for every key, kept after the key.
  const r3 = await RemoteObjects.fromUrl(`${base}/token/remote?token=abc`);
  const small = expected.objects.find((o) => o.content !== undefined && o.size > 10);
  assert.equal(hex(await r3.get(small.id)), small.content);
  const noToken = await rejects(RemoteObjects.fromUrl(`${base}/token/remote/`), 'IO', /HTTP 403/);
  assert.doesNotMatch(noToken.message, /token=/);
  // A wrong signature: 403, an IO error that names the key, not the URL.
  const bad = await rejects(RemoteObjects.fromResolver((key) => `${base}/signed/remote/${key}?sig=0`), 'IO', /GET manifest .*HTTP 403/);
  assert.doesNotMatch(bad.message, /sig=/);
  // What the resolver throws or rejects with comes out as it is.
  const thrown = new TypeError('no credentials');
  await assert.rejects(RemoteObjects.fromResolver(() => { throw thrown; }), (e) => e === thrown);
  await assert.rejects(RemoteObjects.fromResolver(async () => Promise.reject(thrown)), (e) => e === thrown);
  await rejects(RemoteObjects.fromResolver(() => 42), 'INVALID_ARGUMENT', /the resolver gave 42 for "manifest"/);
  await rejects(RemoteObjects.fromResolver('not a function'), 'INVALID_ARGUMENT');
  await rejects(RemoteObjects.fromUrl(42), 'INVALID_ARGUMENT');
});

test('damaged, missing and unreadable remotes give typed errors', async () => {
  // One payload byte flipped in a chunk of the 2 MB object.
  const d = await RemoteObjects.fromUrl(`${base}/remote-fixture/damaged/`);
  const [chunkAt, chunkSize] = expected.damaged.chunk;
  assert.equal(expected.damaged.object, big.id);
  await rejects(d.get(big.id), 'CHECKSUM_MISMATCH', /\.pack at offset \d+/);
  await rejects(d.getRange(big.id, chunkAt + Math.floor(chunkSize / 2), 10), 'CHECKSUM_MISMATCH');
  const r = await remote();
  const before = await d.getRange(big.id, 0, chunkAt);
  assert.ok(Buffer.from(before).equals(Buffer.from(await r.getRange(big.id, 0, chunkAt))), 'bytes before the damage still read');

  await rejects(RemoteObjects.fromUrl(`${base}/remote-fixture/nothing-here/`), 'NOT_FOUND', /nothing-here\/manifest does not exist/);
  await rejects(RemoteObjects.fromUrl(`${base}/remote-fixture/garbage/`), 'NOT_A_BALE_FILE');
  // A pack's bytes where the manifest should be.
  const pack = packFiles('remote', '.pack')[0];
  await rejects(RemoteObjects.fromResolver((key) => `${base}/remote-fixture/remote/${key === 'manifest' ? `packs/${pack}` : key}`), 'CORRUPT');

  // A server that ignores ranges: the remote opens (whole GETs), but a
  // read is refused rather than download a whole pack each time.
  const nr = await RemoteObjects.fromUrl(`${base}/norange/remote-fixture/remote/`);
  await rejects(nr.getRange(big.id, 500_000, 100), 'IO', /does not honour Range requests/);

  // Nothing listening.
  const port = await new Promise((ok) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port: free } = s.address();
      s.close(() => ok(free));
    });
  });
  await rejects(RemoteObjects.fromUrl(`http://127.0.0.1:${port}/remote/`), 'IO', /GET manifest from http:\/\/127\.0\.0\.1:\d+\/remote/);
});

test('servers that answer wrongly: each answer a typed error, never wrong bytes', async () => {
  // Serves remote/ whole, and answers range reads of packs as `mode` says;
  // modes `huge` and `padded*` lie about whole reads instead.
  const liar = createHttpServer((req, res) => {
    const [, mode, ...rest] = new URL(req.url, 'http://x').pathname.split('/');
    const file = join(FIXTURE, 'remote', ...rest);
    if (!existsSync(file)) return res.writeHead(404).end();
    const bytes = readFileSync(file);
    const m = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
    if (!m && mode === 'huge' && rest.join('/') === 'manifest') {
      // Announces 300 MiB and never ends: refused on its header alone.
      res.writeHead(200, { 'content-length': 300 * 2 ** 20 });
      return res.write(bytes);
    }
    if (!m && mode.startsWith('padded') && file.endsWith('.idx')) {
      // One byte more than the manifest gives the index, its length said or not.
      const padded = Buffer.concat([bytes, Buffer.alloc(1)]);
      const headers = mode === 'padded' ? { 'content-length': padded.length } : { 'transfer-encoding': 'chunked' };
      return res.writeHead(200, headers).end(padded);
    }
    if (!m) return res.writeHead(200, { 'content-length': bytes.length }).end(bytes);
    const [a, b] = [Number(m[1]), Number(m[2])];
    const send = (from, to, headers = {}) => {
      const body = bytes.subarray(from, to + 1);
      res.writeHead(206, { 'content-range': `bytes ${from}-${to}/${bytes.length}`, 'content-length': body.length, ...headers }).end(body);
    };
    if (mode === 'shifted') send(a + 1, b + 1);
    else if (mode === 'short') send(a, b - 1);
    else if (mode === 'long') send(a, b + 1, { 'content-range': `bytes ${a}-${b}/${bytes.length}` });
    // One byte more, its length unsaid (a chunked body).
    else if (mode === 'unsized') res.writeHead(206, { 'transfer-encoding': 'chunked' }).end(bytes.subarray(a, b + 2));
    else if (mode === 'gone') res.writeHead(404).end();
    else res.writeHead(500).end();
  });
  await new Promise((ok) => liar.listen(0, '127.0.0.1', ok));
  try {
    const at = (mode) => RemoteObjects.fromUrl(`http://127.0.0.1:${liar.address().port}/${mode}/`);
    await rejects((await at('shifted')).get(big.id), 'IO', /the server sent "bytes \d+-\d+\/\d+" instead/);
    await rejects((await at('short')).get(big.id), 'CORRUPT', /ends before byte/);
    await rejects((await at('long')).get(big.id), 'IO', /the server would send \d+ bytes/);
    await rejects((await at('unsized')).get(big.id), 'IO', /asked \d+ bytes, the server sent \d+/);
    await rejects((await at('gone')).get(big.id), 'NOT_FOUND', /GET packs\/[0-9a-f]{64}\.pack .*does not exist/);
    await rejects((await at('broken')).get(big.id), 'IO', /HTTP status 500/);
    await rejects(at('huge'), 'CORRUPT', /manifest at http:.* is longer than the 268435456 bytes it may have/);
    await rejects(at('padded'), 'CORRUPT', /\.idx at http:.* is longer than the \d+ bytes it may have/);
    await rejects(at('padded-chunked'), 'CORRUPT', /\.idx at http:.* is longer than the \d+ bytes it may have/);
  } finally {
    liar.closeAllConnections();
    await new Promise((ok) => liar.close(ok));
  }
});

test('no HEAD request was ever sent', () => {
  assert.ok(heard.length > 50, `${heard.length} requests`);
  const methods = [...new Set(heard.map((q) => q.method))];
  assert.deepEqual(methods, ['GET']);
});

test('corpus: every remote case opened by URL, listed, and read object by object', async () => {
  // A missing corpus fails the run.
  const manifest = JSON.parse(readFileSync(join(CORPUS, 'manifest.json'), 'utf8'));
  assert.ok(Array.isArray(manifest.remote_cases), 'remote_cases missing from the corpus manifest');
  const from = heard.length;
  const results = await runRemoteCorpus(
    manifest,
    (c) => RemoteObjects.fromUrl(`${base}/corpus/${c.file}/`),
    (c) => JSON.parse(readFileSync(join(CORPUS, c.expect), 'utf8')),
  );
  assert.deepEqual(results.map((r) => r.id), manifest.remote_cases.map((c) => c.id));
  assert.deepEqual(results.filter((r) => !r.ok).map((r) => `${r.id}: ${r.detail}`), []);
  assert.ok(results.filter((r) => r.kind === 'valid').length >= 4 && results.filter((r) => r.kind === 'invalid').length >= 15);
  // Only GETs, and objects read by ranges of their packs.
  const asked = heard.slice(from);
  assert.deepEqual(asked.filter((q) => q.method !== 'GET'), []);
  assert.ok(asked.some((q) => q.range !== null && q.path.endsWith('.pack')));
});
