// The wasm package in real headless Chromium (Debian's chromium driven by
// playwright-core): the golden corpus (tree stores, range queries, object
// stores, bitables) walked in a worker through the Blob backend, and its
// remotes read over HTTP;
// WorkerStore; an object store directory chosen with <input
// webkitdirectory> and read in a worker; object stores opened by URL; a
// remote read over HTTP on the main thread and in a worker. The inspector app has its own
// suite (inspector.test.mjs). Screenshots are kept in
// target/browser-artifacts/.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { basename, join } from 'node:path';

import { canonical } from '../wasm/corpus.js';
import { RemoteObjects } from '../../bindings/wasm/js/node.js';
import { CORPUS, REMOTE_FIXTURE, base, manifest, newPage, rangeBytes, requests, runPage, screenshot } from './harness.mjs';

test('corpus: every case, range query, object store and bitable opened from Blobs in a Web Worker, every remote by URL', async () => {
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
  // Every remote case, its folder read over HTTP by RemoteObjects: what
  // the browser read is the expected document, or the error the manifest's.
  assert.deepEqual(run.remotes.map((r) => r.id), manifest.remote_cases.map((c) => c.id));
  assert.deepEqual(run.remotes.filter((r) => !r.ok).map((r) => `${r.id}: ${r.detail}`), []);
  assert.ok(run.remotes.filter((r) => r.kind === 'valid').length >= 4, 'valid remote cases');
  assert.ok(run.remotes.filter((r) => r.kind === 'invalid').length >= 15, 'invalid remote cases');
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
  // check with onProgress and pageMap, and estimate, through the worker.
  assert.equal(r.checkProgress.ok, true);
  assert.ok(r.checkProgress.calls >= 1, JSON.stringify(r.checkProgress));
  assert.deepEqual(r.checkProgress.last, [r.checkProgress.pages, r.checkProgress.pages]);
  assert.equal(r.checkProgress.mapPages, r.checkProgress.pages);
  assert.equal(r.checkPlain, false);
  assert.equal(r.badProgress.code, 'INVALID_ARGUMENT');
  assert.equal(r.estimate.entries, want.count);
  assert.equal(r.estimate.samples, 16);
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
  await screenshot(page, 'objects-picker');
  assert.deepEqual(errors, []);
  await page.close();
});

test('ObjectStore.fromUrl: every object store case read by URL in a worker, each file fetched by name on first use', async () => {
  const { page, errors } = await newPage();
  await page.goto(`${base}/tests/browser/objects-url.html`);
  await page.waitForFunction(() => window.objectsUrlMain !== undefined);
  // The main thread cannot make synchronous binary requests.
  assert.equal((await page.evaluate(() => window.objectsUrlMain)).code, 'INVALID_ARGUMENT');
  const step = async (message) => {
    const r = await page.evaluate((m) => window.objectsUrlStep(m), message);
    assert.equal(r.ok, true, `${message.step}: ${JSON.stringify(r.error)}`);
    return r.out;
  };
  // What the server did under `prefix` since `since()` was called: body
  // bytes of range responses and HEADs, by path below the prefix.
  const since = () => {
    const [bytes, heads] = [new Map(rangeBytes), new Map(requests)];
    return (prefix) => {
      const out = { bytes: {}, heads: {} };
      for (const [p, n] of rangeBytes) if (p.startsWith(prefix) && n > (bytes.get(p) ?? 0)) out.bytes[p.slice(prefix.length)] = n - (bytes.get(p) ?? 0);
      for (const [k, n] of requests) {
        const p = k.slice('HEAD '.length);
        if (k.startsWith('HEAD ') && p.startsWith(prefix) && n > (heads.get(k) ?? 0)) out.heads[p.slice(prefix.length)] = n - (heads.get(k) ?? 0);
      }
      out.total = Object.values(out.bytes).reduce((a, b) => a + b, 0);
      return out;
    };
  };
  const size = (path) => statSync(join(CORPUS, path)).size;
  const corpus = `${base}/corpus/`;

  // Every case of the corpus: a valid one reads exactly its expected
  // objects, an invalid one gives its code; what a store counted is what
  // the server sent for its files, and its fileBytes the files it opened.
  for (const c of manifest.object_cases) {
    const served = since();
    const r = await step({ step: 'case', corpus, c });
    assert.equal(r.ok, true, `${c.id}: ${r.detail}`);
    const prefix = c.single_file ? `/corpus/${c.file}` : `/corpus/${c.file}/`;
    const s = served(prefix);
    if (c.expect) {
      assert.equal(r.bytesRead, s.total, `${c.id}: counted ${r.bytesRead} bytes, the server sent ${s.total}`);
      const opened = Object.keys(s.heads).filter((f) => existsSync(join(CORPUS, prefix.slice('/corpus/'.length) + f)));
      assert.equal(r.fileBytes, opened.reduce((n, f) => n + size(prefix.slice('/corpus/'.length) + f), 0), c.id);
      // A file is asked for once, however often it is read.
      assert.ok(Object.values(s.heads).every((n) => n === 1), `${c.id}: ${JSON.stringify(s.heads)}`);
    }
  }
  assert.ok(manifest.object_cases.filter((c) => c.expect && !c.single_file).length >= 3);
  assert.ok(manifest.object_cases.filter((c) => c.expect && c.single_file).length >= 2);

  // One directory store step by step: open and list touch the config and
  // the index only; reading the objects fetches the pack and staging file.
  const c = manifest.object_cases.find((x) => x.id === 'objects-blake3');
  const want = JSON.parse(readFileSync(join(CORPUS, c.expect), 'utf8'));
  const prefix = `/corpus/${c.file}/`;
  let served = since();
  const opened = await step({ step: 'open', url: `${base}${prefix}` });
  let s = served(prefix);
  assert.deepEqual(Object.keys(s.heads).sort(), ['config', 'index']);
  assert.deepEqual(Object.keys(s.bytes).sort(), ['config', 'index']);
  assert.equal(opened.bytes, s.total);
  assert.equal(opened.fileBytes, size(`${c.file}/config`) + size(`${c.file}/index`));
  assert.deepEqual([opened.hash, opened.singleFile], [want.hash, false]);
  served = since();
  const listed = await step({ step: 'list' });
  s = served(prefix);
  assert.deepEqual(listed.ids, want.objects.map(([id]) => id));
  assert.deepEqual(listed.page, listed.ids.slice(0, 3));
  assert.deepEqual(listed.tail, listed.ids.slice(-3).reverse());
  assert.deepEqual(s.heads, {});
  assert.deepEqual(Object.keys(s.bytes).filter((f) => f !== 'index'), [], 'listing fetched no pack byte');
  assert.equal(listed.bytes, opened.bytes + s.total);
  // overview(): no listing (the folder cannot be listed, and a walk of
  // the index is what it must not cost), so the staging files are unknown;
  // no file is asked for, nothing but index pages read.
  served = since();
  const ov = await step({ step: 'overview' });
  s = served(prefix);
  assert.deepEqual([ov.overview.stagingFiles, ov.overview.stagingBytes], [null, null]);
  assert.equal(ov.overview.packs, c.files.filter((f) => f.startsWith('packs/')).length);
  assert.deepEqual(s.heads, {});
  assert.deepEqual(Object.keys(s.bytes).filter((f) => f !== 'index'), [], 'overview fetched no pack byte');
  assert.equal(ov.bytes, listed.bytes + s.total);
  served = since();
  const read = await step({ step: 'read' });
  s = served(prefix);
  assert.deepEqual(read.objects, want.objects);
  assert.deepEqual(Object.keys(s.heads).sort(), c.files.filter((f) => /^(packs|staging)\//.test(f)).sort());
  assert.ok(Object.keys(s.bytes).some((f) => f.startsWith('packs/')));
  assert.equal(read.bytes, ov.bytes + s.total, 'the counter is the bytes the server sent');
  const all = c.files.filter((f) => f !== 'lock');
  assert.equal(read.fileBytes, all.reduce((n, f) => n + size(`${c.file}/${f}`), 0));
  const checked = await step({ step: 'check' });
  assert.deepEqual(checked.files.map((f) => f.file).sort(), all.filter((f) => f.endsWith('.pack')).sort());
  assert.ok(checked.files.every((f) => f.fileBytes === size(`${c.file}/${f.file}`)));
  assert.equal(checked.report.ok, true, JSON.stringify(checked.report.problems));
  // validate's progress: bytes of records, rising, the last call complete.
  assert.ok(checked.calls.length >= 2, JSON.stringify(checked.calls));
  const [done, total] = checked.calls.at(-1);
  assert.ok(total > 0 && done === total, JSON.stringify(checked.calls));
  assert.ok(checked.calls.every(([d, t], i) => t === total && (i === 0 || d > checked.calls[i - 1][0])));

  // The pack the index names is missing (404): the store opens and lists,
  // and a read of an object in it gives the core's code, asking once.
  const m = manifest.object_cases.find((x) => x.id === 'objects-pack-missing');
  served = since();
  const missing = await step({ step: 'missing', url: `${base}/corpus/${m.file}/` });
  s = served(`/corpus/${m.file}/`);
  assert.ok(missing.ids.length > 0 && missing.packed > 0);
  assert.equal(missing.first.code, m.error, missing.first.message);
  assert.equal(missing.again.code, m.error);
  assert.match(missing.first.message, /packs\/0\.pack is missing/);
  assert.equal(missing.files.find((f) => f.file === 'packs/0.pack').fileBytes, null);
  assert.equal(missing.report.ok, false);
  assert.ok(missing.report.problems.some((p) => p.code === m.error && p.file === 'packs/0.pack'), JSON.stringify(missing.report.problems));
  assert.equal(s.heads['packs/0.pack'], 1, JSON.stringify(s.heads));
  assert.equal(missing.bytes, s.total);

  const refused = await step({
    step: 'refusals',
    notThere: `${base}/corpus/no-such-store/`,
    notThereFile: `${base}/corpus/no-such-store.bale`,
    noRange: `${base}/norange${prefix}`,
    good: `${base}${prefix}`,
  });
  assert.equal(refused.notThere.code, 'NOT_FOUND', refused.notThere.message);
  assert.match(refused.notThere.message, /no-such-store\/: no object store/);
  assert.equal(refused.notThereFile.code, 'NOT_FOUND');
  assert.equal(refused.noRange.code, 'IO');
  assert.match(refused.noRange.message, /does not honour Range/);
  assert.equal(refused.badOption.code, 'INVALID_ARGUMENT');
  assert.equal(refused.badProgress.code, 'INVALID_ARGUMENT');
  assert.match(refused.badProgress.message, /onProgress must be a function/);
  // What onProgress throws comes out of validate, after one call.
  assert.equal(refused.thrown.message, 'stop after 1 call');
  await screenshot(page, 'objects-url');
  assert.deepEqual(errors, []);
  await page.close();
});

test('RemoteObjects: a remote read by URL on the main thread and by a resolver in a worker, with GET requests only', async () => {
  // A missing fixture fails the run.
  const want = JSON.parse(readFileSync(join(REMOTE_FIXTURE, 'expected.json'), 'utf8'));
  const big = want.objects.find((o) => o.size === 2_100_000);
  const before = new Map(requests);
  const { page, errors, run } = await runPage(`/tests/browser/remote.html?id=${big.id}`, 'remoteRun', 60000);
  assert.equal(run.error, undefined, JSON.stringify(run.error));
  // The same range read in Node, for comparison.
  const node = await RemoteObjects.fromUrl(`${base}/remote-fixture/remote/`);
  const range = Buffer.from(await node.getRange(big.id, 1_234_567, 100)).toString('hex');
  for (const where of ['main', 'worker']) {
    const r = run[where];
    assert.deepEqual(
      { generation: r.opened.generation, hash: r.opened.hash, packCount: r.opened.packCount, objectCount: r.opened.objectCount },
      { generation: want.generation, hash: want.hash, packCount: want.packs, objectCount: want.objects.length },
      where,
    );
    assert.equal(r.opened.traffic.requests, 1 + want.packs, where);
    assert.equal(r.size, big.size, where);
    assert.equal(r.sha256, big.sha256, where);
    assert.equal(r.range, range, where);
    assert.equal(r.rangeMatches, true, where);
    assert.deepEqual(r.listed, want.objects.slice(0, 3).map((o) => o.id), where);
    assert.ok(r.traffic.bytesReceived > big.size, `${where}: ${JSON.stringify(r.traffic)}`);
    assert.deepEqual(r.damaged, { name: 'BaleError', code: 'CHECKSUM_MISMATCH', isError: true }, where);
  }
  // Every request for the remotes was a GET.
  const sent = [...requests].filter(([k, n]) => k.includes(' /remote-fixture/') && n > (before.get(k) ?? 0)).map(([k]) => k);
  assert.ok(sent.some((k) => k.startsWith('GET /remote-fixture/remote/packs/') && k.endsWith('.pack')), JSON.stringify(sent));
  assert.deepEqual(sent.filter((k) => !k.startsWith('GET ')), []);
  assert.deepEqual(errors, []);
  await page.close();
});
