// The page of the sql.js viewer, the inspector benchmark's peer: it hands a
// picked File or a URL to its Web Worker (worker.js), which reads the whole
// file and opens it with sql.js, and shows the kv table 50 keys at a time,
// paged by key. It has the hooks of the bale inspector that the benchmark
// (cases.mjs) drives: #file, ?url=, body[data-state], window.inspector
// ({ summary, read }), #tab-keys, #keys td.key, #keys-next, #seek and a
// bubbling page-shown event once a page's rows are in the DOM.
const $ = (id) => document.getElementById(id);
const PAGE = 50;
const state = (window.inspector = { summary: null, read: { bytes: 0, reads: 0 } });

let worker = null;
const pending = new Map();
let nextId = 1;

function fail(e) {
  for (const p of pending.values()) p.reject(e);
  pending.clear();
  worker?.terminate();
  worker = null;
}

/** A fresh worker per file, as the bale inspector starts one per open. */
function startWorker() {
  fail(Object.assign(new Error('a new file was opened'), { name: 'Cancelled' }));
  worker = new Worker('./worker.js');
  worker.onmessage = ({ data }) => {
    if (data.read) showRead(data.read);
    const p = pending.get(data.id);
    if (!p) return;
    pending.delete(data.id);
    if (data.ok) p.resolve(data.result);
    else p.reject(Object.assign(new Error(data.error.message), { name: data.error.name }));
  };
  // A worker that dies (out of memory, or its script did not load).
  worker.onerror = (ev) => {
    ev.preventDefault();
    fail(Object.assign(new Error(`the worker failed: ${ev.message || 'it did not load'}`), { name: 'WorkerError' }));
  };
}

function call(op, ...args) {
  const id = nextId++;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject });
    worker.postMessage({ id, op, args });
  });
}

function showRead(read) {
  state.read = read;
  $('read').value = `${read.bytes.toLocaleString('en-US')} bytes in ${read.reads} read${read.reads === 1 ? '' : 's'}`;
}

function status(text) {
  $('status').textContent = text;
}

let rows = [];

function render(page) {
  rows = page.rows;
  $('keys-prev').disabled = !page.prev;
  $('keys-next').disabled = !page.next;
  const tr = (cells) => {
    const r = document.createElement('tr');
    r.append(...cells);
    return r;
  };
  const cell = (tag, cls, text) => Object.assign(document.createElement(tag), { className: cls, textContent: text });
  $('keys').replaceChildren(tr([cell('th', '', 'key'), cell('th', '', 'value bytes')]), ...rows.map((r) => tr([cell('td', 'key', r.key), cell('td', 'num', String(r.length))])));
  $('keys-info').textContent = rows.length ? `${rows.length} keys, ${rows[0].key} … ${rows.at(-1).key}` : 'No keys here.';
}

/** Runs one page query and shows it; page-shown tells the benchmark it is in the DOM. */
async function show(ask) {
  try {
    render(await call('keys', ask, PAGE));
  } catch (e) {
    rows = [];
    $('keys').replaceChildren();
    $('keys-info').textContent = `${e.name}: ${e.message}`;
  }
  $('keys').dispatchEvent(new Event('page-shown', { bubbles: true }));
}

async function open(source, label) {
  $('error').hidden = true;
  $('main').hidden = true;
  delete document.body.dataset.state;
  delete document.body.dataset.code;
  state.summary = null;
  status(`Opening ${label}…`);
  startWorker();
  try {
    const { summary, page } = await call('open', source, PAGE);
    state.summary = summary;
    status(`${label}: SQLite, ${summary.fileBytes.toLocaleString('en-US')} bytes, tables ${summary.tables.join(', ')}.`);
    $('main').hidden = false;
    render(page);
    document.body.dataset.state = 'ready';
  } catch (e) {
    $('error').textContent = `${e.name}: ${e.message}`;
    $('error').hidden = false;
    status(`Could not open ${label}.`);
    document.body.dataset.code = e.name;
    document.body.dataset.state = 'error';
  }
}

$('file').addEventListener('change', () => {
  const f = $('file').files[0];
  if (f) open({ file: f }, f.name);
});
$('url-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const url = new URL($('url').value, location.href).href;
  open({ url }, url);
});
$('tab-keys').addEventListener('click', () => show({}));
$('keys-next').addEventListener('click', () => show(rows.length ? { after: rows.at(-1).key } : {}));
$('keys-prev').addEventListener('click', () => show(rows.length ? { before: rows[0].key } : {}));
$('seek-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  show($('seek').value ? { from: $('seek').value } : {});
});

const fromAddress = new URLSearchParams(location.search).get('url');
if (fromAddress) {
  const url = new URL(fromAddress, location.href).href;
  $('url').value = url;
  open({ url }, url);
}
