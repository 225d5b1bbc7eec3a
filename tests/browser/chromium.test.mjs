// The wasm package in real headless Chromium (Debian's chromium driven by
// playwright-core): the inspector page opens files chosen with
// <input type=file>, its worker reading them lazily; the golden corpus
// (tree stores, range queries, object stores, bitables) is walked in a worker
// through the Blob backend; an object store directory is chosen with
// <input webkitdirectory> and read in a worker; screenshots are kept in
// target/browser-artifacts/.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, readSync, rmSync, statSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, dirname, extname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

import { BIG_LEN, SMALL_KEYS, makeBigStore, smallKey, smallValue } from '../wasm/big-store.mjs';
import { canonical } from '../wasm/corpus.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const REPO = resolve(HERE, '../..');
const WASM = join(REPO, 'bindings/wasm');
const CORPUS = process.env.CORPUS_DIR ? resolve(process.env.CORPUS_DIR) : join(REPO, 'tests/corpus');
const TARGET = process.env.CARGO_TARGET_DIR ? resolve(REPO, process.env.CARGO_TARGET_DIR) : join(REPO, 'target');
const ARTIFACTS = process.env.BROWSER_ARTIFACTS ? resolve(process.env.BROWSER_ARTIFACTS) : join(TARGET, 'browser-artifacts');
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

// Missing pieces fail the run, never skip it.
const manifest = JSON.parse(readFileSync(join(CORPUS, 'manifest.json'), 'utf8'));
assert.ok(existsSync(join(WASM, 'pkg/bale_wasm.js')), 'bindings/wasm/pkg is missing: run make test-wasm');
assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install chromium`);
const { chromium } = createRequire(join(WASM, 'package.json'))('playwright-core');

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.json': 'application/json',
  '.wasm': 'application/wasm',
  '.css': 'text/css',
};
// URL prefix -> directory. The inspector lives at /www/ and imports ../pkg/.
const ROOTS = [
  ['/corpus/', CORPUS],
  ['/tests/', join(REPO, 'tests')],
  ['/', WASM],
];

// The folder served under /big/ while a test needs it.
let bigDir;
// Body bytes of each range response, by path.
const rangeBytes = new Map();

// HEAD, and single `bytes=a-b` ranges (206), as static hosts and buckets
// answer them; under /norange/ the same files, with ranges ignored (200).
function serve(req, res) {
  let path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
  const honoursRange = !path.startsWith('/norange/');
  if (!honoursRange) path = path.slice('/norange'.length);
  const [prefix, dir] = path.startsWith('/big/') && bigDir ? ['/big/', bigDir] : ROOTS.find(([p]) => path.startsWith(p));
  const file = resolve(dir, `.${path.slice(prefix.length - 1)}`);
  if ((file !== dir && !file.startsWith(dir + sep)) || !existsSync(file) || !statSync(file).isFile()) {
    res.writeHead(404).end('not found');
    return;
  }
  const size = statSync(file).size;
  const head = { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream', 'cache-control': 'no-store', 'accept-ranges': 'bytes' };
  if (req.method === 'HEAD') {
    res.writeHead(200, { ...head, 'content-length': size }).end();
    return;
  }
  const m = honoursRange && /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
  if (m) {
    const [start, end] = [Number(m[1]), Math.min(Number(m[2]), size - 1)];
    const body = Buffer.alloc(Math.max(0, end - start + 1));
    const fd = openSync(file, 'r');
    try {
      readSync(fd, body, 0, body.length, start);
    } finally {
      closeSync(fd);
    }
    rangeBytes.set(path, (rangeBytes.get(path) ?? 0) + body.length);
    res.writeHead(206, { ...head, 'content-range': `bytes ${start}-${end}/${size}`, 'content-length': body.length });
    res.end(body);
    return;
  }
  res.writeHead(200, head);
  res.end(readFileSync(file));
}

let server;
let base;
let browser;
let profile;

before(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  server = createServer(serve);
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  base = `http://127.0.0.1:${server.address().port}`;
  profile = mkdtempSync(join(tmpdir(), 'bale-chromium-'));
  browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: FLAGS,
    viewport: { width: 1280, height: 900 },
  });
});

after(async () => {
  await browser?.close();
  await new Promise((ok) => (server ? server.close(ok) : ok()));
  if (profile) rmSync(profile, { recursive: true, force: true });
});

/** A page whose uncaught errors and console errors fail the test. */
async function newPage() {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => m.type() === 'error' && errors.push(`console: ${m.text()}`));
  return { page, errors };
}

/**
 * Opens a test page that records its run in `window[name]`, waits for it,
 * keeps a screenshot as `<name>.png`, and returns the page and the record.
 */
async function runPage(path, name, timeout) {
  const { page, errors } = await newPage();
  await page.goto(`${base}${path}`);
  await page.waitForFunction((n) => window[n] !== undefined, name, { timeout });
  const run = await page.evaluate((n) => window[n], name);
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
  return { page, errors, run };
}

async function inspect(page, file, key) {
  await page.goto(`${base}/www/index.html`);
  if (key !== undefined) await page.fill('#key', key);
  await page.setInputFiles('#file', file);
  await page.waitForSelector('body[data-state]', { timeout: 60000 });
  return page.evaluate(() => ({ state: document.body.dataset.state, code: document.body.dataset.code, report: window.baleReport, status: document.getElementById('status').textContent }));
}

test('inspector: a corpus store chosen with <input type=file>', async () => {
  const { page, errors } = await newPage();
  const c = manifest.cases.find((x) => x.id === 'thousands');
  const want = JSON.parse(readFileSync(join(CORPUS, c.expect), 'utf8'));
  const r = await inspect(page, join(CORPUS, c.file), 'key-000042');
  assert.equal(r.state, 'ready', r.status);
  assert.equal(r.report.count, want.count);
  assert.equal(r.report.stat.entries, want.count);
  assert.equal(r.report.pageSize, want.page_size);
  const firstKeys = want.entries.slice(0, r.report.keys.length).map(([k]) => Buffer.from(k, 'hex').toString());
  const shown = await page.$$eval('#keys td.key', (tds) => tds.map((td) => td.textContent));
  assert.deepEqual(shown, firstKeys);
  const v42 = want.entries.find(([k]) => Buffer.from(k, 'hex').toString() === 'key-000042')[1];
  assert.equal(r.report.lookup.length, v42.length / 2);
  // Check, and a lookup typed after opening.
  await page.click('#check');
  await page.waitForFunction(() => window.baleCheck !== undefined);
  assert.equal(await page.evaluate(() => window.baleCheck.ok), true);
  await page.fill('#key', 'key-001999');
  await page.click('#get');
  await page.waitForFunction(() => window.baleLookup !== undefined);
  assert.equal(await page.evaluate(() => window.baleLookup.found), true);
  await page.screenshot({ path: join(ARTIFACTS, 'inspector-corpus.png'), fullPage: true });
  assert.deepEqual(errors, []);
  await page.close();
});

test('inspector: a damaged file shows its error code', async () => {
  const { page, errors } = await newPage();
  for (const id of ['wrong-magic', 'future-version', 'truncated-half']) {
    const c = manifest.cases.find((x) => x.id === id);
    const r = await inspect(page, join(CORPUS, c.file));
    assert.equal(r.state, 'error', `${id}: ${r.status}`);
    assert.equal(r.code, c.error, `${id}: ${r.status}`);
  }
  assert.deepEqual(errors, []);
  await page.close();
});

test('corpus: every case, range query, object store and bitable opened from Blobs in a Web Worker', async () => {
  const { page, errors, run } = await runPage('/tests/browser/corpus.html', 'corpusRun', 120000);
  assert.equal(run.error, undefined);
  assert.equal(run.results.length, manifest.cases.length);
  assert.ok(run.results.length >= 20);
  const bad = run.results.filter((r) => !r.ok).map((r) => `${r.id}: ${r.detail}`);
  assert.deepEqual(bad, []);
  assert.ok(run.results.some((r) => r.kind === 'valid') && run.results.some((r) => r.kind === 'invalid'));
  // Every range query of the corpus ran, and each gave its keys or its error.
  const queryCount = manifest.cases
    .filter((c) => c.queries)
    .reduce((n, c) => n + JSON.parse(readFileSync(join(CORPUS, c.queries), 'utf8')).queries.length, 0);
  assert.ok(queryCount > 0, 'no range queries in the corpus');
  assert.equal(run.queries.length, queryCount);
  assert.deepEqual(run.queries.filter((r) => !r.ok).map((r) => `${r.id}: ${r.detail}`), []);
  // Every object store case, each file a Blob read lazily.
  assert.equal(run.objects.length, manifest.object_cases.length);
  assert.ok(run.objects.length >= 15, `only ${run.objects.length} object store cases`);
  assert.deepEqual(run.objects.filter((r) => !r.ok).map((r) => `${r.id}: ${r.detail}`), []);
  assert.deepEqual(run.objects.map((r) => r.id), manifest.object_cases.map((c) => c.id));
  assert.ok(run.objects.some((r) => r.kind === 'valid') && run.objects.some((r) => r.kind === 'invalid'));
  for (const r of run.objects.filter((r) => r.kind === 'valid')) assert.ok(r.bytesRead > 0, `${r.id}: nothing counted`);
  // Every bitable case, each a Blob read lazily: what the browser read is
  // the expected document (compared here through its digest), or the
  // error is the manifest's.
  assert.deepEqual(run.bitables.map((r) => r.id), manifest.bitable_cases.map((c) => c.id));
  assert.ok(run.bitables.length >= 21, `only ${run.bitables.length} bitable cases`);
  assert.deepEqual(run.bitables.filter((r) => !r.ok).map((r) => `${r.id}: ${r.detail}`), []);
  for (const [i, c] of manifest.bitable_cases.entries()) {
    const r = run.bitables[i];
    if (c.expect) {
      const want = createHash('sha256').update(canonical(JSON.parse(readFileSync(join(CORPUS, c.expect), 'utf8')))).digest('hex');
      assert.equal(r.digest, want, `${c.id}: what the browser read differs from ${c.expect}`);
      // The chunk cache holds the whole table: no byte is fetched twice.
      assert.ok(r.bytesRead > 0 && r.bytesRead <= r.fileBytes, `${c.id}: ${r.bytesRead} of ${r.fileBytes} bytes fetched`);
    } else {
      assert.equal(r.code, c.error, c.id);
    }
  }
  assert.ok(manifest.bitable_cases.filter((c) => c.expect).length >= 7);
  assert.ok(manifest.bitable_cases.filter((c) => c.error).length >= 14);
  // The main thread has no FileReaderSync: a clear INVALID_ARGUMENT error.
  assert.equal(run.main.fromBlob, 'true/BaleError/INVALID_ARGUMENT');
  assert.equal(run.main.fromBytes, 1);
  assert.deepEqual(errors, []);
  await page.close();
});

test('WorkerStore: stores in a worker through Promises; error codes, transfers and the chunk cache', async () => {
  const { page, errors, run: r } = await runPage('/tests/browser/worker.html', 'workerRun', 60000);
  assert.equal(r.error, undefined, r.error);
  // Every rejection is an Error with the code the Store would throw.
  const codes = { notBale: 'NOT_A_BALE_FILE', badSource: 'INVALID_ARGUMENT', wrongVersion: 'UNSUPPORTED_VERSION', checksum: 'CHECKSUM_MISMATCH', badKey: 'INVALID_ARGUMENT', badOption: 'INVALID_ARGUMENT', readOnly: 'INVALID_ARGUMENT', closed: 'CLOSED', earlyExport: 'INVALID_ARGUMENT', noWorker: 'IO', uncloneable: 'INVALID_ARGUMENT' };
  for (const [step, code] of Object.entries(codes)) {
    assert.equal(r[step].isError, true, `${step}: ${JSON.stringify(r[step])}`);
    assert.equal(r[step].name, 'BaleError', step);
    assert.equal(r[step].code, code, `${step}: ${r[step].message}`);
    assert.ok(r[step].message.startsWith(`${code}: `), r[step].message);
  }
  assert.equal(typeof r.checksum.page, 'number');
  assert.match(r.badOption.message, /unknown range option "start"/);
  assert.match(r.badSource.message, /open\(\) takes a Uint8Array, an ArrayBuffer, a Blob, a File or a URL/);
  assert.equal(r.closedFlag, true);
  // The File read lazily in the worker: a full scan in far fewer source
  // reads than page reads, the cache within its budget.
  const deep = manifest.cases.find((c) => c.id === 'thousands');
  const want = JSON.parse(readFileSync(join(CORPUS, deep.expect), 'utf8'));
  assert.equal(r.lazyInfo.count, want.count);
  assert.equal(r.lazyInfo.writable, false);
  assert.equal(r.scan.entries, want.count);
  console.log(`WorkerStore scan of a File: ${r.scan.cache.requests} page reads, ${r.scan.sourceReads} source reads, ${r.scan.cache.aheadChunks} chunks read ahead`);
  assert.equal(Buffer.from(r.scan.firstKey).toString('hex'), want.entries[0][0]);
  assert.ok(r.scan.cache.requests >= 65, JSON.stringify(r.scan.cache));
  assert.ok(r.scan.sourceReads * 5 <= r.scan.cache.requests, `${r.scan.sourceReads} source reads, ${r.scan.cache.requests} page reads`);
  assert.ok(r.scan.cache.aheadChunks > 0);
  assert.ok(r.scan.cache.cachedBytes <= r.scan.cache.capacityBytes && r.scan.cache.capacityBytes < r.scan.fileBytes);
  assert.deepEqual(r.keysLimited, want.entries.slice(-3).reverse().map(([k]) => Buffer.from(k, 'hex').toString()));
  // The scan's keys and values were moved out of the worker.
  assert.ok(r.transferred.after - r.transferred.before >= want.entries.reduce((n, [k, v]) => n + (k.length + v.length) / 2, 0), JSON.stringify(r.transferred));
  // Writable store in a worker; transfer() moved the caller's buffers.
  assert.equal(r.sentDetached, true);
  assert.equal(r.inTxn, true);
  assert.equal(r.bigRoundTrip, true);
  assert.equal(r.deleted, true);
  assert.ok(r.exportedBytes >= 3 * 4096 && r.exportedBytes % 4096 === 0, `${r.exportedBytes}`);
  assert.equal(r.exportDetached, true);
  assert.deepEqual(r.reopened, { count: 2, name: 'tree.png', writable: false, big: true });
  assert.equal(r.reopenedCheck, true);
  assert.deepEqual(errors, []);
  await page.close();
});

test('inspector: a ~1 GiB store opens reading a few pages', async () => {
  const big = await makeBigStore();
  try {
    const { page, errors } = await newPage();
    const key = smallKey(1234);
    const r = await inspect(page, big.path, key);
    assert.equal(r.state, 'ready', r.status);
    assert.ok(r.report.size > BIG_LEN);
    assert.equal(r.report.count, SMALL_KEYS + 1);
    assert.equal(r.report.lookup.found, true);
    assert.equal(Buffer.from(Object.values(r.report.lookup.preview)).toString(), smallValue(1234).slice(0, 24));
    const ol = r.report.openAndLookup;
    console.log(`browser, 1 GiB store (${r.report.size} bytes): open + get(${key}) read ${ol.bytes} bytes in ${ol.reads} reads; stat read ${r.report.statRead.bytes} bytes`);
    // The header and meta pages share the cache's first chunk; then a
    // chunk per tree level.
    assert.ok(ol.bytes <= 4 * r.report.cache.chunkBytes, `open + get read ${ol.bytes} bytes`);
    assert.ok(ol.reads <= 4, `${ol.reads} reads`);
    // stat walks the tree and the big value's block index, never its blocks.
    assert.equal(r.report.stat.largeValues, 1);
    assert.ok(r.report.statRead.bytes < 4 << 20, `stat read ${r.report.statRead.bytes} bytes`);
    await page.screenshot({ path: join(ARTIFACTS, 'inspector-1gib.png'), fullPage: true });
    assert.deepEqual(errors, []);
    await page.close();
    await openByUrl(big.path, key);
  } finally {
    bigDir = undefined;
    big.cleanup();
  }
});

/**
 * The same ~1 GiB store read where it lies, by URL, with range requests
 * from a Web Worker; a corpus store and bitable by URL read as from their
 * files; a missing file, a server that ignores ranges, a file that is not
 * bale's and a main-thread open each give their error code.
 */
async function openByUrl(bigPath, key) {
  bigDir = dirname(bigPath);
  rangeBytes.clear();
  const store = manifest.cases.find((x) => x.id === 'thousands');
  const table = manifest.bitable_cases.find((x) => x.id === 'bitable-deep');
  const q = new URLSearchParams({
    big: `${base}/big/${basename(bigPath)}`,
    key,
    store: `${base}/corpus/${store.file}`,
    bitable: `${base}/corpus/${table.file}`,
    missing: `${base}/corpus/no-such.bale`,
    noRange: `${base}/norange/corpus/${store.file}`,
    notBale: `${base}/corpus/manifest.json`,
  });
  const { page, errors, run } = await runPage(`/tests/browser/url.html?${q}`, 'urlRun', 120000);
  assert.equal(run.ok, true, JSON.stringify(run.error));
  const r = run.out;
  assert.equal(r.big.value, smallValue(1234));
  // What the store counted is what the server sent, and it is a few chunks
  // of a file of more than 1 GiB.
  const served = rangeBytes.get(`/big/${basename(bigPath)}`);
  assert.equal(served, r.big.totalBytes);
  assert.ok(r.big.bytes <= 4 * 16384 && r.big.reads <= 4, `open + get read ${r.big.bytes} bytes in ${r.big.reads} requests`);
  console.log(`browser, 1 GiB store by URL: open + get(${key}) fetched ${r.big.bytes} bytes in ${r.big.reads} range requests`);
  assert.deepEqual(r.big.firstKeys, ['big', smallKey(0), smallKey(1)]);
  const want = JSON.parse(readFileSync(join(CORPUS, store.expect), 'utf8'));
  assert.deepEqual(r.store.keys, want.entries.map(([k]) => Buffer.from(k, 'hex').toString()));
  const wantTable = JSON.parse(readFileSync(join(CORPUS, table.expect), 'utf8'));
  assert.equal(r.bitable.count, wantTable.entries.length);
  assert.equal(r.bitable.first, wantTable.entries[0][0]);
  assert.equal(r.missing.code, 'NOT_FOUND', JSON.stringify(r.missing));
  assert.equal(r.noRange.code, 'IO', JSON.stringify(r.noRange));
  assert.match(r.noRange.message, /does not honour Range requests/);
  assert.equal(r.notBale.code, 'NOT_A_BALE_FILE', JSON.stringify(r.notBale));
  assert.equal(run.mainThread.code, 'INVALID_ARGUMENT', JSON.stringify(run.mainThread));
  assert.match(run.mainThread.message, /inside a Web Worker/);
  assert.deepEqual(errors, []);
  await page.close();
}

test('ObjectStore: a directory store chosen with <input webkitdirectory>, read lazily in a worker', async () => {
  const { page, errors } = await newPage();
  const c = manifest.object_cases.find((x) => x.id === 'objects-blake3');
  const want = JSON.parse(readFileSync(join(CORPUS, c.expect), 'utf8'));
  const dir = join(CORPUS, c.file);
  await page.goto(`${base}/tests/browser/objects.html`);
  // playwright gives a webkitdirectory input the directory itself.
  await page.setInputFiles('#dir', dir);
  await page.waitForSelector('body[data-state]', { timeout: 60000 });
  const r = await page.evaluate(() => window.objectsRun);
  assert.equal(r.ok, true, JSON.stringify(r.error));
  // The worker got the FileList, each File's path under the directory's name.
  assert.equal(r.isFileList, true);
  assert.deepEqual([...r.paths].sort(), c.files.map((f) => `${basename(dir)}/${f}`).sort());
  assert.equal(r.fileBytes, c.files.reduce((n, f) => n + statSync(join(dir, f)).size, 0));
  assert.equal(r.hash, want.hash);
  assert.equal(r.singleFile, false);
  assert.deepEqual(r.ids, want.objects.map(([id]) => id));
  assert.equal(r.stats.objects, want.count);
  assert.equal(Buffer.from(r.small.bytes).toString('hex'), new Map(want.objects).get(r.small.id));
  const shown = await page.$$eval('#objects td:first-child', (tds) => tds.map((td) => td.textContent));
  assert.deepEqual(shown, r.ids);
  console.log(`object store picked (${r.fileBytes} bytes in ${r.paths.length} files): open read ${r.opened.bytes} bytes, open + list ${r.listed.bytes}; get of a ${r.small.size}-byte object read ${r.oneGet.bytes} bytes in ${r.oneGet.reads} reads`);
  // Lazy reads: one small object costs a few chunks of one file, far from
  // the whole store, and open + list read the config and index, not the packs.
  assert.ok(r.oneGet.bytes > 0 && r.oneGet.bytes < r.fileBytes, `${r.oneGet.bytes} of ${r.fileBytes} bytes`);
  assert.ok(r.listed.bytes < r.fileBytes, `open + list read ${r.listed.bytes} of ${r.fileBytes} bytes`);
  await page.screenshot({ path: join(ARTIFACTS, 'objects-picker.png'), fullPage: true });
  assert.deepEqual(errors, []);
  await page.close();
});
