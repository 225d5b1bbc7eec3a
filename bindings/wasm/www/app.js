// The inspector page: opens the chosen File in the package's WorkerStore
// (the store runs in a Web Worker that reads the file lazily) and shows
// what it reads. Nothing is uploaded and the file is never modified.
import { WorkerStore } from '../js/worker.js';

const $ = (id) => document.getElementById(id);
let store = null;

const FIRST_KEYS = 50;
const PREVIEW = 24;

function status(text, cls = '') {
  const s = $('status');
  s.textContent = text;
  s.className = cls;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });
const hex = (b) => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
function show(bytes) {
  try {
    const s = utf8.decode(bytes);
    if (!/[\u0000-\u001f\u007f]/.test(s)) return s === '' ? '(empty)' : s;
  } catch {}
  return `hex:${hex(bytes)}`;
}
function parseKey(text) {
  if (!text.startsWith('hex:')) return text;
  const h = text.slice(4);
  if (!/^([0-9a-fA-F]{2})*$/.test(h)) throw new Error('hex key: an even number of hex digits');
  return Uint8Array.from(h.match(/../g) ?? [], (x) => parseInt(x, 16));
}
function bytes(n) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${i === 0 ? n : n.toFixed(n < 10 ? 2 : 1)} ${units[i]}`;
}
const fmt = (n) => n.toLocaleString('en-US');
function rows(table, pairs) {
  table.replaceChildren(...pairs.map(([k, v]) => {
    const tr = document.createElement('tr');
    const th = document.createElement('th');
    th.textContent = k;
    const td = document.createElement('td');
    td.textContent = v;
    tr.append(th, td);
    return tr;
  }));
}
const readText = (r) => `${fmt(r.bytes)} bytes in ${fmt(r.reads)} reads`;

function lookupRows(l) {
  if (!l.found) return [['key', show(typeof l.key === 'string' ? new TextEncoder().encode(l.key) : l.key)], ['found', 'no'], ['read', readText(l.read)]];
  return [
    ['key', typeof l.key === 'string' ? l.key : show(l.key)],
    ['value length', `${fmt(l.length)} bytes (${bytes(l.length)})`],
    ['first bytes', show(l.preview)],
    ['read', readText(l.read)],
  ];
}

/** What the store fetched from the file since the last resetCounters(). */
async function counters() {
  const i = await store.refreshInfo();
  return { bytes: i.bytesRead, reads: i.readCount };
}

async function lookup(key) {
  await store.resetCounters();
  const length = await store.valueLength(key);
  const preview = length === undefined ? null : await store.getRange(key, 0, PREVIEW);
  return { key, found: length !== undefined, length: length ?? null, preview, read: await counters() };
}

/** Opens `file` and reads what the page shows, counting the reads of each step. */
async function inspectFile(file, key) {
  if (store) await store.close();
  store = null;
  store = await WorkerStore.open(file);
  const { info } = store;
  const r = { name: file.name, size: file.size, pageSize: info.pageSize, formatVersion: info.formatVersion, count: info.count };
  r.open = { bytes: info.bytesRead, reads: info.readCount };
  if (key !== undefined) {
    // Open + this one lookup, before anything else touches the file.
    r.lookup = await lookup(key);
    r.openAndLookup = { bytes: r.open.bytes + r.lookup.read.bytes, reads: r.open.reads + r.lookup.read.reads };
  }
  await store.resetCounters();
  const keys = await store.keys({ limit: FIRST_KEYS });
  const lengths = await Promise.all(keys.map((k) => store.valueLength(k)));
  r.keys = keys.map((k, i) => ({ key: k, length: lengths[i] }));
  r.listing = await counters();
  await store.resetCounters();
  r.stat = await store.stat();
  r.statRead = await counters();
  r.cache = await store.cacheStats();
  return r;
}

async function openFile(file) {
  status(`Opening ${file.name}…`);
  $('get').disabled = $('check').disabled = true;
  const keyText = $('key').value;
  let r;
  try {
    r = await inspectFile(file, keyText ? parseKey(keyText) : undefined);
  } catch (e) {
    $('result').hidden = true;
    status(`${file.name}: ${e.code ?? e.name}: ${e.message}`, 'error');
    document.body.dataset.state = 'error';
    document.body.dataset.code = e.code ?? '';
    return;
  }
  rows($('summary'), [
    ['file', file.name],
    ['size', `${fmt(r.size)} bytes (${bytes(r.size)})`],
    ['format', `tree store v${r.formatVersion}, ${fmt(r.pageSize)}-byte pages`],
    ['entries', fmt(r.count)],
    ['read to open', readText(r.open)],
    ...(r.openAndLookup ? [['open + lookup', readText(r.openAndLookup)]] : []),
    ['read to list keys', readText(r.listing)],
    ['read for stat', readText(r.statRead)],
  ]);
  rows($('stat'), Object.entries(r.stat).map(([k, v]) => [k, k === 'fill' ? v.toFixed(3) : fmt(v)]));
  if (r.lookup) rows($('lookup'), lookupRows(r.lookup));
  $('keys-title').textContent = `First ${r.keys.length} of ${fmt(r.count)} keys`;
  const head = document.createElement('tr');
  head.innerHTML = '<th>key</th><th>value bytes</th>';
  $('keys').replaceChildren(head, ...r.keys.map(({ key, length }) => {
    const tr = document.createElement('tr');
    const a = document.createElement('td');
    a.className = 'key';
    a.textContent = show(key);
    const b = document.createElement('td');
    b.className = 'num';
    b.textContent = fmt(length);
    tr.append(a, b);
    return tr;
  }));
  $('result').hidden = false;
  $('get').disabled = $('check').disabled = false;
  window.baleReport = r;
  document.body.dataset.state = 'ready';
  status(`${file.name}: ${fmt(r.count)} entries; opened reading ${readText(r.open)} of ${bytes(r.size)}.`, 'ready');
}

$('file').addEventListener('change', () => {
  const f = $('file').files[0];
  if (f) openFile(f);
});
$('get').addEventListener('click', async () => {
  try {
    const l = await lookup(parseKey($('key').value));
    rows($('lookup'), lookupRows(l));
    window.baleLookup = l;
  } catch (e) {
    rows($('lookup'), [['error', `${e.code ?? e.name}: ${e.message}`]]);
  }
});
$('check').addEventListener('click', async () => {
  try {
    await store.resetCounters();
    const report = await store.check();
    const read = await counters();
    rows($('checked'), [
      ['result', report.ok ? 'ok' : `${report.problems.length} problems`],
      ['pages', fmt(report.pages)],
      ['read', readText(read)],
      ...report.problems.slice(0, 10).map((p) => [`page ${p.page ?? '-'}`, p.message]),
    ]);
    window.baleCheck = report;
  } catch (e) {
    rows($('checked'), [['error', `${e.code ?? e.name}: ${e.message}`]]);
  }
});
