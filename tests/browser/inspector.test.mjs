// The inspector app (bindings/wasm/www) end to end in headless Chromium: a
// user picks files, a folder or a URL (or drops a file), browses keys in
// both orders with prefix and seek, views values as text, hex, JSON and
// images, downloads one, runs check with its progress bar and page map,
// looks at bitables' levels, ranks and selects, and at object stores; every
// damaged corpus file shows its error code; a ~4.5 GiB store opens by file
// and by URL reading a few pages, and the bytes-read counter is what the
// server sent. Screenshots go to target/browser-artifacts/inspector-*.png.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { crc32, deflateSync } from 'node:zlib';

import { Store } from '../../bindings/wasm/js/node.js';
import { cliPath } from '../wasm/cli.mjs';
import { BIG_LEN, SMALL_KEYS, makeBigStore, smallKey, smallValue } from '../wasm/big-store.mjs';
import { CORPUS, base, manifest, newPage, rangeBytes, runPage, screenshot, serveBig } from './harness.mjs';

const keyText = (hex) => Buffer.from(hex, 'hex').toString();
const shot = (page, name) => screenshot(page, `inspector-${name}`);

let work;
before(() => {
  work = mkdtempSync(join(tmpdir(), 'bale-inspector-'));
});
after(() => rmSync(work, { recursive: true, force: true }));

/** Opens the inspector on a picked file (or with `?url=`) and waits until it shows it or its error. */
async function openFile(page, file) {
  await page.goto(`${base}/www/index.html`);
  await page.setInputFiles('#file', file);
  return settled(page);
}

async function settled(page) {
  await page.waitForSelector('body[data-state]', { timeout: 60000 });
  return page.evaluate(() => ({
    state: document.body.dataset.state,
    code: document.body.dataset.code,
    status: document.getElementById('status').textContent,
    error: document.getElementById('error').textContent,
    summary: window.inspector.summary,
    read: window.inspector.read,
  }));
}

/** Clicks `selector` and waits for the DOM event `event` the click leads to. */
async function act(page, selector, event) {
  const done = page.evaluate((ev) => new Promise((ok) => document.addEventListener(ev, () => ok(), { once: true })), event);
  await page.click(selector);
  await done;
}

const shownKeys = (page) => page.$$eval('#keys td.key', (tds) => tds.map((td) => td.textContent));
const read = (page) => page.evaluate(() => window.inspector.read);

test('a tree store: overview, keys in both orders with prefix and seek, a value, check with its page map', async () => {
  const { page, errors } = await newPage();
  const c = manifest.cases.find((x) => x.id === 'thousands');
  const want = JSON.parse(readFileSync(join(CORPUS, c.expect), 'utf8'));
  const keys = want.entries.map(([k]) => keyText(k));
  const r = await openFile(page, join(CORPUS, c.file));
  assert.equal(r.state, 'ready', r.status);
  assert.equal(r.summary.kind, 'tree');
  assert.equal(r.summary.count, want.count);
  const overview = await page.textContent('#overview');
  assert.match(overview, /2,000/);
  // Laziness shows on the ~4.5 GiB store below; this small file is read
  // whole by the overview's estimate, each chunk once (plus the 16 bytes
  // of the header sniffed to tell the kind).
  assert.ok(r.read.bytes > 0 && r.read.bytes <= r.summary.fileBytes + 16, JSON.stringify(r.read));
  assert.match(await page.textContent('#read'), /of 276\.0 KiB/);
  // The shape, estimated from a few pages when the overview shows.
  await page.waitForSelector('#estimate[data-ready]');
  const est = await page.evaluate(() => window.inspector.estimate);
  assert.equal(est.entries, want.count);
  assert.equal(est.depth, 2);
  assert.match(await page.textContent('#estimate'), /leaf fill\d/);
  // The full statistics walk the tree on request.
  await page.click('#stat-run');
  await page.waitForSelector('#stat[data-ready]');
  const stat = await page.evaluate(() => window.inspector.stat);
  assert.equal(stat.entries, want.count);
  assert.match(await page.textContent('#stat'), /leaf pages65/);

  await act(page, '#tab-keys', 'page-shown');
  assert.deepEqual(await shownKeys(page), keys.slice(0, 50));
  assert.equal(await page.isDisabled('#keys-prev'), true);
  await act(page, '#keys-next', 'page-shown');
  assert.deepEqual(await shownKeys(page), keys.slice(50, 100));
  await act(page, '#keys-last', 'page-shown');
  assert.deepEqual(await shownKeys(page), keys.slice(-50));
  assert.equal(await page.isDisabled('#keys-next'), true);
  await act(page, '#keys-prev', 'page-shown');
  assert.deepEqual(await shownKeys(page), keys.slice(-100, -50));
  await act(page, '#keys-first', 'page-shown');
  assert.deepEqual(await shownKeys(page), keys.slice(0, 50));
  // Descending, then a page further down.
  await page.selectOption('#order', 'desc');
  await act(page, 'form[aria-label="find keys"] button[type=submit]', 'page-shown');
  assert.deepEqual(await shownKeys(page), keys.slice(-50).reverse());
  await act(page, '#keys-next', 'page-shown');
  assert.deepEqual(await shownKeys(page), keys.slice(-100, -50).reverse());
  // A prefix, both ways, and the end of it.
  await page.fill('#prefix', 'key-0012');
  await page.selectOption('#order', 'asc');
  await act(page, 'form[aria-label="find keys"] button[type=submit]', 'page-shown');
  const under = keys.filter((k) => k.startsWith('key-0012'));
  assert.deepEqual(await shownKeys(page), under.slice(0, 50));
  await act(page, '#keys-next', 'page-shown');
  assert.deepEqual(await shownKeys(page), under.slice(50, 100));
  assert.equal(await page.isDisabled('#keys-next'), true);
  // Seek, both ways.
  await page.fill('#prefix', '');
  await page.fill('#seek', 'key-000777');
  await act(page, 'form[aria-label="find keys"] button[type=submit]', 'page-shown');
  assert.deepEqual(await shownKeys(page), keys.slice(777, 827));
  assert.equal(await page.isDisabled('#keys-prev'), false);
  await page.selectOption('#order', 'desc');
  await act(page, 'form[aria-label="find keys"] button[type=submit]', 'page-shown');
  assert.deepEqual(await shownKeys(page), keys.slice(728, 778).reverse());

  // The keyboard: down one row, Enter opens its value.
  await page.selectOption('#order', 'asc');
  await act(page, 'form[aria-label="find keys"] button[type=submit]', 'page-shown');
  await page.focus('#keys tr[data-index="0"]');
  await page.keyboard.press('ArrowDown');
  const shown = page.evaluate(() => new Promise((ok) => document.addEventListener('value-shown', () => ok(), { once: true })));
  await page.keyboard.press('Enter');
  await shown;
  const value = Buffer.from(want.entries[778][1], 'hex');
  assert.equal(await page.textContent('#value h3'), keys[778]);
  const mode = await page.getAttribute('#value', 'data-mode');
  const body = await page.textContent('#value .value-body');
  if (mode === 'text') assert.equal(body, value.toString());
  else assert.match(body, new RegExp(value.subarray(0, 8).toString('hex').replace(/(..)/g, '$1 ').trim()));
  await shot(page, 'tree-keys');

  // Check: progress to the end, every page verified, the page map.
  await page.click('#tab-check');
  await act(page, '#check-run', 'check-done');
  assert.equal(await page.getAttribute('#check-result', 'data-ok'), 'true');
  const bar = await page.evaluate(() => {
    const b = document.getElementById('check-progress');
    return { value: b.value, max: b.max, done: Number(b.dataset.done), total: Number(b.dataset.total) };
  });
  assert.equal(bar.value, bar.max);
  assert.ok(bar.total > 0 && bar.done === bar.total, JSON.stringify(bar));
  const pages = Math.ceil(r.summary.fileBytes / r.summary.pageSize);
  const map = await page.evaluate(() => {
    const f = document.querySelector('figure[data-plot="page-map"]');
    const rows = [...f.querySelectorAll('table.legend tr')].slice(1).map((tr) => [...tr.cells].map((td) => td.textContent.trim()));
    return { caption: f.querySelector('figcaption').textContent, label: f.querySelector('canvas').getAttribute('aria-label'), rows };
  });
  assert.match(map.caption, new RegExp(`^Page map of ${pages} pages`));
  assert.equal(map.caption, map.label);
  assert.equal(map.rows.reduce((n, row) => n + Number(row[1].replace(/,/g, '')), 0), pages);
  assert.ok(map.rows.some(([k]) => k === 'leaf') && map.rows.some(([k]) => k === 'branch'), JSON.stringify(map.rows));
  assert.ok(await page.isVisible('figure[data-plot="histogram"] canvas'));
  await shot(page, 'tree-check');
  assert.deepEqual(errors, []);
  await page.close();
});

/** A PNG of `w` × `h` pixels, RGB, built here. */
function png(w, h) {
  const chunk = (type, data) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const td = Buffer.concat([Buffer.from(type), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(td));
    return Buffer.concat([len, td, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0);
  ihdr.writeUInt32BE(h, 4);
  ihdr.set([8, 2, 0, 0, 0], 8);
  const rows = [];
  for (let y = 0; y < h; y++) {
    rows.push(Buffer.from([0]));
    for (let x = 0; x < w; x++) rows.push(Buffer.from([(x * 40) & 255, (y * 60) & 255, 160]));
  }
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(Buffer.concat(rows))),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

test('values: an image previewed, JSON pretty, binary as hex, a long text shown in steps, a download', async () => {
  const values = {
    'asset/logo.png': png(40, 24),
    'doc/config.json': Buffer.from(JSON.stringify({ name: 'bale', sizes: [1, 2, 3], nested: { ok: true } })),
    'raw/bytes': Buffer.from([0, 1, 2, 3, 250, 251, 252, 253, 254, 255, 0, 7]),
    'text/long': Buffer.from('line of text\n'.repeat(12000)),
  };
  const s = Store.create();
  for (const [k, v] of Object.entries(values)) s.put(k, v);
  s.commit();
  const file = join(work, 'values.bale');
  writeFileSync(file, s.toBytes());
  const { page, errors } = await newPage();
  const r = await openFile(page, file);
  assert.equal(r.state, 'ready', r.status);
  await act(page, '#tab-keys', 'page-shown');
  assert.deepEqual(await shownKeys(page), Object.keys(values));
  const open = async (i) => {
    const done = page.evaluate(() => new Promise((ok) => document.addEventListener('value-shown', () => ok(), { once: true })));
    await page.click(`#keys tr[data-index="${i}"]`);
    await done;
    return page.getAttribute('#value', 'data-mode');
  };
  // The image: decoded by the browser at its size.
  const imageShown = page.evaluate(() => new Promise((ok) => document.addEventListener('image-shown', () => ok(), { once: true, capture: true })));
  assert.equal(await open(0), 'image');
  await imageShown;
  assert.deepEqual(await page.evaluate(() => [document.getElementById('value').dataset.imageWidth, document.getElementById('value').dataset.imageHeight]), ['40', '24']);
  assert.match(await page.getAttribute('#value img', 'alt'), /image\/png/);
  await shot(page, 'value-image');
  // The download is the value's bytes.
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#value .toolbar > button')]);
  assert.deepEqual(readFileSync(await download.path()), values['asset/logo.png']);
  // JSON, pretty.
  assert.equal(await open(1), 'json');
  assert.equal(await page.textContent('#value pre'), JSON.stringify(JSON.parse(values['doc/config.json']), null, 2));
  // Binary: a hex dump with an ASCII column.
  assert.equal(await open(2), 'hex');
  assert.match(await page.textContent('#value pre'), /^00000000 {2}00 01 02 03 fa fb fc fd fe ff 00 07/);
  // Text longer than a view: the first 64 KiB, then more on request.
  assert.equal(await open(3), 'text');
  assert.equal((await page.textContent('#value pre')).length, 64 * 1024);
  await page.click('#value .value-body button');
  await page.waitForFunction(() => document.querySelector('#value pre').textContent.length > 64 * 1024);
  assert.equal((await page.textContent('#value pre')).length, Math.min(128 * 1024, values['text/long'].length));
  // The modes are radio buttons: arrows move between them.
  await page.focus('#value [role=radio][data-mode="text"]');
  await page.keyboard.press('ArrowRight');
  assert.equal(await page.getAttribute('#value', 'data-mode'), 'hex');
  assert.deepEqual(errors, []);
  await page.close();
});

test('a bitable: levels, ranked keys, rank and select, check with progress', async () => {
  const { page, errors } = await newPage();
  const c = manifest.bitable_cases.find((x) => x.id === 'bitable-deep');
  const want = JSON.parse(readFileSync(join(CORPUS, c.expect), 'utf8'));
  const r = await openFile(page, join(CORPUS, c.file));
  assert.equal(r.state, 'ready', r.status);
  assert.equal(r.summary.kind, 'bitable');
  assert.equal(r.summary.count, want.entries.length);
  await page.waitForSelector('figure[data-plot="levels"]');
  const stats = await page.evaluate(() => window.inspector.bitableStats);
  assert.ok(stats.depth >= 2, JSON.stringify(stats));
  const levelRows = await page.$$eval('figure[data-plot="levels"] table.legend tr', (trs) => trs.length - 1);
  assert.equal(levelRows, stats.levelPages.length);
  await shot(page, 'bitable-overview');
  // As the page shows keys: text when printable, else hex:.
  const keyOf = (i) => {
    const k = Buffer.from(want.entries[i][0], 'hex');
    return /^[\x20-\x7e]*$/.test(k.toString('latin1')) ? k.toString() : `hex:${k.toString('hex')}`;
  };
  await act(page, '#tab-keys', 'page-shown');
  const ranks = () => page.$$eval('#keys tr[data-index] td:first-child', (tds) => tds.map((td) => Number(td.textContent.replace(/,/g, ''))));
  assert.deepEqual(await ranks(), [...Array(50).keys()]);
  await act(page, '#keys-last', 'page-shown');
  const n = want.entries.length;
  assert.deepEqual(await ranks(), [...Array(50).keys()].map((i) => n - 50 + i));
  // Rank and select agree with the expected document.
  await page.click('#tab-rank');
  const i = Math.floor(n / 3);
  await page.fill('#select-n', String(i));
  await act(page, '#panel-rank form:nth-of-type(2) button', 'answered');
  const selected = await page.$$eval('#rank-out td', (tds) => tds.map((td) => td.textContent));
  assert.equal(selected[0], i.toLocaleString('en-US'));
  assert.equal(selected[1], keyOf(i));
  await page.fill('#rank-key', keyOf(i));
  await act(page, '#panel-rank form:nth-of-type(1) button', 'answered');
  assert.equal((await page.$$eval('#rank-out td', (tds) => tds.map((td) => td.textContent)))[1], i.toLocaleString('en-US'));
  // select, then "Show in Keys": the key browser starts at that rank.
  await page.click('#panel-rank form:nth-of-type(2) button');
  await page.waitForSelector('#rank-out button');
  await act(page, '#rank-out button', 'page-shown');
  assert.equal((await ranks())[0], i);
  await page.click('#tab-check');
  await act(page, '#check-run', 'check-done');
  assert.equal(await page.getAttribute('#check-result', 'data-ok'), 'true');
  assert.equal(await page.evaluate(() => document.getElementById('check-progress').value), await page.evaluate(() => document.getElementById('check-progress').max));
  assert.deepEqual(errors, []);
  await page.close();
});

test('an object store folder: overview, objects page by page, one object\'s chunk map and content, dedup and pack usage', async () => {
  const { page, errors } = await newPage();
  const c = manifest.object_cases.find((x) => x.id === 'objects-blake3');
  const want = JSON.parse(readFileSync(join(CORPUS, c.expect), 'utf8'));
  await page.goto(`${base}/www/index.html`);
  const listed = page.evaluate(() => new Promise((ok) => document.addEventListener('page-shown', () => ok(), { once: true })));
  await page.setInputFiles('#folder', join(CORPUS, c.file));
  const r = await settled(page);
  assert.equal(r.state, 'ready', r.status);
  assert.equal(r.summary.kind, 'objects');
  assert.equal(r.summary.hash, want.hash);
  await listed;
  const ids = await page.$$eval('#objects td.key', (tds) => tds.map((td) => td.textContent));
  assert.deepEqual(ids, want.objects.map(([id]) => id));
  assert.match(await page.textContent('#objects-overview'), /\d/);
  // The largest object: its chunks tile it, and its content is its bytes.
  const [bigId, bigHex] = want.objects.reduce((a, b) => (b[1].length > a[1].length ? b : a));
  const shown = page.evaluate(() => new Promise((ok) => document.addEventListener('object-shown', () => ok(), { once: true })));
  await page.click(`#objects tr[aria-label="${bigId}"]`);
  await shown;
  const chunks = await page.$$eval('#object-chunks tr', (trs) => trs.slice(1).map((tr) => [...tr.cells].map((td) => td.textContent)));
  assert.ok(chunks.length >= 1);
  const sizes = chunks.map((row) => Number(row[1].replace(/,/g, '')));
  assert.equal(sizes.reduce((a, b) => a + b, 0), bigHex.length / 2);
  assert.equal(Number(chunks[0][0]), 0);
  assert.ok(await page.isVisible('figure[data-plot="chunk-map"] canvas'));
  const mode = await page.getAttribute('#object-content', 'data-mode');
  const body = await page.textContent('#object-content .value-body');
  const bytes = Buffer.from(bigHex, 'hex');
  if (mode === 'text') assert.equal(body, bytes.toString());
  else assert.match(body, new RegExp(bytes.subarray(0, 8).toString('hex').replace(/(..)/g, '$1 ').trim()));
  await shot(page, 'objects');
  // Sizes and dedup, then pack usage: both read the whole index.
  await act(page, '#objects-stats', 'analysis-done');
  const dedup = Number(await page.getAttribute('#objects-stats-out', 'data-dedup'));
  assert.ok(dedup >= 1, `dedup ${dedup}`);
  assert.ok(await page.isVisible('figure[data-plot="dedup"] canvas'));
  const sizeRows = await page.$$eval('figure[data-plot="sizes"] table.legend tr', (trs) => trs.slice(1).map((tr) => Number(tr.cells[1].textContent.replace(/,/g, ''))));
  assert.equal(sizeRows.reduce((a, b) => a + b, 0), want.objects.length);
  await act(page, '#objects-files', 'analysis-done');
  const files = await page.$$eval('figure[data-plot="packs"] table.legend tr', (trs) => trs.slice(1).map((tr) => tr.cells[0].textContent));
  assert.ok(files.length >= 2, JSON.stringify(files));
  await shot(page, 'objects-analysis');
  // Validate: every record rehashed, the bar filled from its progress.
  await act(page, '#objects-validate', 'analysis-done');
  assert.equal(await page.getAttribute('#objects-validate-out', 'data-ok'), 'true', await page.textContent('#objects-validate-out'));
  const [done, total] = await page.$eval('#validate-progress', (b) => [Number(b.dataset.done), Number(b.dataset.total)]);
  assert.ok(total > 0 && done === total, `${done} of ${total}`);
  assert.match(await page.textContent('#validate-status'), new RegExp(`^ok: ${want.objects.length} objects`));
  // A single-file object store is a tree store too: both views.
  const one = manifest.object_cases.find((x) => x.id === 'objects-file-blake3');
  const wantOne = JSON.parse(readFileSync(join(CORPUS, one.expect), 'utf8'));
  const r1 = await openFile(page, join(CORPUS, one.file));
  assert.equal(r1.state, 'ready', r1.status);
  assert.equal(r1.summary.objects, true);
  assert.deepEqual(await page.$$eval('[role=tab]', (ts) => ts.map((t) => t.textContent)), ['Overview', 'Objects', 'Index keys', 'Check']);
  await act(page, '#tab-objects', 'page-shown');
  assert.deepEqual(await page.$$eval('#objects td.key', (tds) => tds.map((td) => td.textContent)), wantOne.objects.map(([id]) => id));
  assert.deepEqual(errors, []);
  await page.close();
});

test('object stores by URL: a folder from ?url= ending in /, found file by file, and a single-file store; the counter is what the server sent', async () => {
  const { page, errors } = await newPage();
  const c = manifest.object_cases.find((x) => x.id === 'objects-sha256');
  const want = JSON.parse(readFileSync(join(CORPUS, c.expect), 'utf8'));
  const prefix = `/corpus/${c.file}/`;
  const sent = () => [...rangeBytes].filter(([p]) => p.startsWith(prefix)).reduce((n, [, b]) => n + b, 0);
  for (const [p] of rangeBytes) if (p.startsWith(prefix)) rangeBytes.delete(p);
  await page.goto(`${base}/www/index.html?url=${encodeURIComponent(`${base}${prefix}`)}`);
  const r = await settled(page);
  assert.equal(r.state, 'ready', r.status);
  assert.deepEqual([r.summary.kind, r.summary.hash, r.summary.filesFound], ['objects', want.hash, true]);
  await page.waitForSelector('#objects-info:not(:empty)');
  assert.deepEqual(await page.$$eval('#objects td.key', (tds) => tds.map((td) => td.textContent)), want.objects.map(([id]) => id));
  // Listing read the config and the index, no pack or staging file.
  assert.deepEqual([...rangeBytes.keys()].filter((p) => p.startsWith(prefix)).map((p) => p.slice(prefix.length)).sort(), ['config', 'index']);
  assert.equal((await read(page)).bytes, sent());
  assert.match(await page.textContent('#read'), / found so far in /);
  // An object's content comes from its pack, by range.
  const [id, hex] = want.objects.reduce((a, b) => (b[1].length > a[1].length ? b : a));
  const shown = page.evaluate(() => new Promise((ok) => document.addEventListener('object-shown', () => ok(), { once: true })));
  await page.click(`#objects tr[aria-label="${id}"]`);
  await shown;
  const chunkSizes = await page.$$eval('#object-chunks tr', (trs) => trs.slice(1).map((tr) => Number(tr.cells[1].textContent.replace(/,/g, ''))));
  assert.equal(chunkSizes.reduce((a, b) => a + b, 0), hex.length / 2);
  assert.ok([...rangeBytes.keys()].some((p) => /^(packs|staging)\//.test(p.slice(prefix.length))));
  await act(page, '#objects-validate', 'analysis-done');
  assert.equal(await page.getAttribute('#objects-validate-out', 'data-ok'), 'true', await page.textContent('#objects-validate-out'));
  // Pack usage sizes every file the index names: all of the store's files.
  await act(page, '#objects-files', 'analysis-done');
  const counted = await read(page);
  assert.equal(counted.bytes, sent(), 'the counter is the bytes the server sent');
  const size = c.files.filter((f) => f !== 'lock').reduce((n, f) => n + statSync(join(CORPUS, c.file, f)).size, 0);
  assert.equal(counted.fileBytes, size);
  await shot(page, 'objects-url');

  // A single-file object store by URL: a tree store with an Objects tab.
  const one = manifest.object_cases.find((x) => x.id === 'objects-file-sha1');
  const wantOne = JSON.parse(readFileSync(join(CORPUS, one.expect), 'utf8'));
  await page.goto(`${base}/www/index.html?url=${encodeURIComponent(`${base}/corpus/${one.file}`)}`);
  const r1 = await settled(page);
  assert.equal(r1.state, 'ready', r1.status);
  assert.equal(r1.summary.objects, true);
  await act(page, '#tab-objects', 'page-shown');
  assert.deepEqual(await page.$$eval('#objects td.key', (tds) => tds.map((td) => td.textContent)), wantOne.objects.map(([x]) => x));
  // A folder URL with no store there: its code, not a blank page.
  await page.goto(`${base}/www/index.html?url=${encodeURIComponent(`${base}/corpus/no-such-store/`)}`);
  const missing = await settled(page);
  assert.deepEqual([missing.state, missing.code], ['error', 'NOT_FOUND'], missing.error);
  assert.deepEqual(errors, []);
  await page.close();
});

test('objects page by page: Next and Previous over 120 objects the CLI stored', async () => {
  const dir = join(work, 'many');
  const files = join(work, 'many-files');
  mkdirSync(files);
  for (let i = 0; i < 120; i++) writeFileSync(join(files, `f${i}`), `object number ${i}`);
  const run = (args) => {
    const r = spawnSync(cliPath(), args, { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    return r.stdout;
  };
  run(['obj', 'init', dir]);
  run(['obj', 'add', dir, files]);
  const ids = run(['obj', 'ls', dir]).trim().split('\n');
  assert.equal(ids.length, 120);
  const { page, errors } = await newPage();
  await page.goto(`${base}/www/index.html`);
  const listed = page.evaluate(() => new Promise((ok) => document.addEventListener('page-shown', () => ok(), { once: true })));
  await page.setInputFiles('#folder', dir);
  assert.equal((await settled(page)).state, 'ready');
  await listed;
  const shown = () => page.$$eval('#objects td.key', (tds) => tds.map((td) => td.textContent));
  assert.deepEqual(await shown(), ids.slice(0, 50));
  assert.equal(await page.isDisabled('#objects-prev'), true);
  await act(page, '#objects-next', 'page-shown');
  assert.deepEqual(await shown(), ids.slice(50, 100));
  await act(page, '#objects-next', 'page-shown');
  assert.deepEqual(await shown(), ids.slice(100));
  assert.equal(await page.isDisabled('#objects-next'), true);
  await act(page, '#objects-prev', 'page-shown');
  assert.deepEqual(await shown(), ids.slice(50, 100));
  await act(page, '#objects-prev', 'page-shown');
  assert.deepEqual(await shown(), ids.slice(0, 50));
  assert.equal(await page.isDisabled('#objects-prev'), true);
  // Keyboard: down a row and Enter shows that object.
  await page.focus('#objects tr[data-index="0"]');
  await page.keyboard.press('ArrowDown');
  const objectShown = page.evaluate(() => new Promise((ok) => document.addEventListener('object-shown', () => ok(), { once: true })));
  await page.keyboard.press('Enter');
  await objectShown;
  assert.match(await page.textContent('#object h3'), new RegExp(ids[1]));
  assert.deepEqual(errors, []);
  await page.close();
});

test('every damaged corpus file and store shows its error code: on opening, while browsing, in an object, or in check', async () => {
  const { page, errors } = await newPage();
  const cases = [...manifest.cases, ...manifest.bitable_cases].filter((c) => c.error);
  assert.ok(cases.length >= 30 && manifest.object_cases.filter((c) => c.error).length >= 10);
  const seen = [];
  for (const c of cases) {
    const r = await openFile(page, join(CORPUS, c.file));
    if (r.state === 'error') {
      assert.equal(r.code, c.error, `${c.id}: ${r.error}`);
      assert.ok(r.error.startsWith(c.error), `${c.id}: ${r.error}`);
      seen.push([c.id, 'open']);
      continue;
    }
    // Opened: the first page read that is damaged says so, with its code
    // and, when the core names one, the page and its file offset.
    await act(page, '#tab-keys', 'page-shown');
    let info = await page.textContent('#keys-info');
    for (let guard = 0; !info.startsWith(c.error) && !(await page.isDisabled('#keys-next')) && guard < 100; guard++) {
      await act(page, '#keys-next', 'page-shown');
      info = await page.textContent('#keys-info');
    }
    if (info.startsWith(c.error)) {
      const damaged = await page.getAttribute('#keys-info', 'data-page');
      if (damaged !== null) {
        const offset = (Number(damaged) * r.summary.pageSize).toLocaleString('en-US');
        assert.ok(info.endsWith(`offset ${offset})`), `${c.id}: ${info}`);
      }
      seen.push([c.id, 'keys']);
      continue;
    }
    // Damage no key listing reaches (a value's block): check finds it.
    await page.click('#tab-check');
    await act(page, '#check-run', 'check-done');
    const problems = Number(await page.getAttribute('#check-result', 'data-problems'));
    const code = await page.getAttribute('#check-result', 'data-code');
    assert.ok(problems > 0 || code === c.error, `${c.id}: no error seen (${info})`);
    seen.push([c.id, 'check']);
  }
  // Damaged object stores (folders, or single files): on opening, in the
  // object list, or in an object's chunks or content.
  for (const c of manifest.object_cases.filter((x) => x.error)) {
    await page.goto(`${base}/www/index.html`);
    const path = join(CORPUS, c.file);
    await page.setInputFiles(statSync(path).isDirectory() ? '#folder' : '#file', path);
    const r = await settled(page);
    if (r.state === 'error') {
      assert.equal(r.code, c.error, `${c.id}: ${r.error}`);
      seen.push([c.id, 'open']);
      continue;
    }
    await page.waitForSelector('#objects-info:not(:empty)');
    const info = await page.textContent('#objects-info');
    if (info.startsWith(c.error)) {
      seen.push([c.id, 'list']);
      continue;
    }
    let found = false;
    for (const id of await page.$$eval('#objects tr[aria-label]', (trs) => trs.map((tr) => tr.getAttribute('aria-label')))) {
      const shown = page.evaluate(() => new Promise((ok) => document.addEventListener('object-shown', () => ok(), { once: true })));
      await page.click(`#objects tr[aria-label="${id}"]`);
      await shown;
      const error = await page.$eval('#object', (e) => e.querySelector('p.error')?.textContent ?? '');
      if (error.startsWith(c.error)) {
        found = true;
        break;
      }
    }
    assert.ok(found, `${c.id}: no object showed ${c.error}`);
    seen.push([c.id, 'object']);
    // Validate finds it too, with its code.
    await act(page, '#objects-validate', 'analysis-done');
    const problems = await page.$$eval('#validate-problems tr', (trs) => trs.slice(1).map((tr) => tr.cells[2].textContent));
    assert.equal(await page.getAttribute('#objects-validate-out', 'data-ok'), 'false', `${c.id}: validated ok`);
    assert.ok(problems.some((p) => p.startsWith(c.error)), `${c.id}: ${JSON.stringify(problems)}`);
  }
  console.log(`damaged files: ${seen.map(([id, where]) => `${id}@${where}`).join(' ')}`);
  assert.ok(seen.filter(([, w]) => w === 'open').length >= 15);
  assert.ok(seen.some(([, w]) => w === 'keys') && seen.some(([, w]) => w === 'check'));
  await shot(page, 'damaged');
  assert.deepEqual(errors, []);
  await page.close();
});

test('a file dropped on the page opens; the theme and the tabs answer the keyboard', async () => {
  const { page, errors } = await newPage();
  await page.goto(`${base}/www/index.html`);
  const c = manifest.cases.find((x) => x.id === 'one-key');
  const bytes = [...readFileSync(join(CORPUS, c.file))];
  await page.evaluate((b) => {
    const dt = new DataTransfer();
    dt.items.add(new File([new Uint8Array(b)], 'dropped.bale'));
    document.dispatchEvent(new DragEvent('dragenter', { dataTransfer: dt, bubbles: true }));
    document.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
  }, bytes);
  const r = await settled(page);
  assert.equal(r.state, 'ready', r.status);
  assert.equal(r.summary.name, 'dropped.bale');
  assert.equal(await page.isHidden('#drop'), true);
  // Tabs: arrows move the selection.
  await page.focus('#tab-overview');
  await page.keyboard.press('ArrowRight');
  assert.equal(await page.getAttribute('#tab-keys', 'aria-selected'), 'true');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'tab-keys');
  await page.keyboard.press('End');
  assert.equal(await page.getAttribute('#tab-check', 'aria-selected'), 'true');
  // Dark theme.
  const light = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  await page.click('#theme');
  assert.equal(await page.getAttribute('#theme', 'aria-pressed'), 'true');
  const dark = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  assert.notEqual(dark, light);
  assert.equal(dark, 'rgb(15, 20, 25)');
  await page.click('#tab-keys');
  await shot(page, 'dark');
  assert.deepEqual(errors, []);
  await page.close();
});

test('bale inspect: the CLI serves the page and the file or object store folder it names, and the page opens it', async () => {
  const c = manifest.cases.find((x) => x.id === 'thousands');
  const child = spawn(cliPath(), ['--json', 'inspect', '--no-open', join(CORPUS, c.file)], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const [line] = await once(createInterface({ input: child.stdout }), 'line');
    const { url } = JSON.parse(line);
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/www\/index\.html\?url=\/files\/thousands\.bale$/);
    const { page, errors } = await newPage();
    await page.goto(url);
    const r = await settled(page);
    assert.equal(r.state, 'ready', r.status);
    assert.equal(r.summary.count, 2000);
    assert.ok(r.read.bytes < r.summary.fileBytes, JSON.stringify(r.read));
    await act(page, '#tab-keys', 'page-shown');
    assert.equal((await shownKeys(page))[0], 'key-000000');
    await shot(page, 'cli');
    assert.deepEqual(errors, []);
    await page.close();
  } finally {
    child.kill();
  }
  // An object store's folder: served file by file, opened by its URL.
  const o = manifest.object_cases.find((x) => x.id === 'objects-blake3');
  const want = JSON.parse(readFileSync(join(CORPUS, o.expect), 'utf8'));
  const folder = spawn(cliPath(), ['--json', 'inspect', '--no-open', join(CORPUS, o.file)], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const [line] = await once(createInterface({ input: folder.stdout }), 'line');
    const { url } = JSON.parse(line);
    assert.match(url, new RegExp(`\\?url=/files/${basename(o.file)}/$`));
    const { page, errors } = await newPage();
    await page.goto(url);
    const r = await settled(page);
    assert.equal(r.state, 'ready', r.status);
    assert.deepEqual([r.summary.kind, r.summary.hash], ['objects', want.hash]);
    await page.waitForSelector('#objects-info:not(:empty)');
    assert.deepEqual(await page.$$eval('#objects td.key', (tds) => tds.map((td) => td.textContent)), want.objects.map(([id]) => id));
    await act(page, '#objects-validate', 'analysis-done');
    assert.equal(await page.getAttribute('#objects-validate-out', 'data-ok'), 'true');
    assert.deepEqual(errors, []);
    await page.close();
  } finally {
    folder.kill();
  }
});

test('a ~4.5 GiB store by file and by URL: the overview and a page of keys read a few pages; the counter is what the server sent', async () => {
  const big = await makeBigStore();
  try {
    const { page, errors } = await newPage();
    const r = await openFile(page, big.path);
    assert.equal(r.state, 'ready', r.status);
    assert.ok(r.summary.fileBytes > BIG_LEN);
    assert.equal(r.summary.count, SMALL_KEYS + 1);
    console.log(`inspector, 4.5 GiB store picked: open read ${r.read.bytes} bytes in ${r.read.reads} reads`);
    assert.ok(r.read.bytes < 1 << 20, `open read ${r.read.bytes} bytes`);
    // The overview's estimate reads a few pages more, still far under 1 MiB.
    await page.waitForSelector('#estimate[data-ready]');
    const withShape = await read(page);
    console.log(`inspector, 4.5 GiB store: open and the estimated shape read ${withShape.bytes} bytes in ${withShape.reads} reads`);
    assert.ok(withShape.bytes < 1 << 20, `open and estimate read ${withShape.bytes} bytes`);
    await act(page, '#tab-keys', 'page-shown');
    assert.deepEqual(await shownKeys(page), ['big', ...[...Array(49).keys()].map(smallKey)]);
    const afterPage = await read(page);
    console.log(`inspector, 4.5 GiB store: open and a page of 50 keys with their lengths read ${afterPage.bytes} bytes`);
    assert.ok(afterPage.bytes < 1 << 20);
    await shot(page, 'big-file');
    await page.close();

    // By URL, from the address.
    serveBig(dirname(big.path));
    rangeBytes.clear();
    const url = `${base}/big/${basename(big.path)}`;
    const { page: p2, errors: e2 } = await newPage();
    await p2.goto(`${base}/www/index.html?url=${encodeURIComponent(url)}`);
    const u = await settled(p2);
    assert.equal(u.state, 'ready', u.status);
    assert.equal(u.summary.count, SMALL_KEYS + 1);
    const path = `/big/${basename(big.path)}`;
    assert.ok(u.read.bytes < 1 << 20, `open by URL fetched ${u.read.bytes} bytes`);
    // The overview's estimate goes on reading after "ready": compare once it is done.
    await p2.waitForSelector('#estimate[data-ready]');
    assert.equal((await read(p2)).bytes, rangeBytes.get(path), 'the counter is the bytes the server sent');
    await p2.click('#tab-keys');
    await p2.fill('#seek', smallKey(2000));
    await act(p2, 'form[aria-label="find keys"] button[type=submit]', 'page-shown');
    assert.equal((await shownKeys(p2))[0], smallKey(2000));
    const done = p2.evaluate(() => new Promise((ok) => document.addEventListener('value-shown', () => ok(), { once: true })));
    await p2.click('#keys tr[data-index="0"]');
    await done;
    assert.equal(await p2.textContent('#value pre'), smallValue(2000));
    const total = await read(p2);
    assert.equal(total.bytes, rangeBytes.get(path));
    console.log(`inspector, 4.5 GiB store by URL: open, seek, a page and a value fetched ${total.bytes} bytes in ${total.reads} requests`);
    await shot(p2, 'big-url');
    assert.deepEqual([...errors, ...e2], []);
    await p2.close();
    await openByUrl(big.path, smallKey(1234));
  } finally {
    serveBig(undefined);
    big.cleanup();
  }
});

/**
 * The package's own URL source (tests/browser/url.html): the same ~4.5 GiB
 * store read by URL from a Web Worker; a corpus store and bitable by URL
 * read as from their files; a missing file, a server that ignores ranges,
 * a file that is not bale's and a main-thread open each give their code.
 */
async function openByUrl(bigPath, key) {
  serveBig(dirname(bigPath));
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
  // of a file of more than 4 GiB.
  const served = rangeBytes.get(`/big/${basename(bigPath)}`);
  assert.equal(served, r.big.totalBytes);
  assert.ok(r.big.bytes <= 4 * 16384 && r.big.reads <= 4, `open + get read ${r.big.bytes} bytes in ${r.big.reads} requests`);
  console.log(`browser, 4.5 GiB store by URL: open + get(${key}) fetched ${r.big.bytes} bytes in ${r.big.reads} range requests`);
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
