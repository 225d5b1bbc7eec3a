// The sql.js viewer's Web Worker: the whole file read into memory (a File's
// arrayBuffer(), or fetch() of a URL) and opened with new SQL.Database, as
// a sql.js viewer opens one; then pages of the kv table by key, each one
// query (plus a probe for what lies before a seek's page).
//
// Messages in: { id, op, args }. Out: { id, ok, result, read } or
// { id, ok: false, error: { name, message }, read }.
/* global initSqlJs */
importScripts('./dist/sql-wasm.js');

const ready = initSqlJs({ locateFile: (file) => `./dist/${file}` });
let db = null;
let read = { bytes: 0, reads: 0 };
const statements = new Map();

function all(sql, params) {
  let s = statements.get(sql);
  if (!s) statements.set(sql, (s = db.prepare(sql)));
  s.bind(params);
  const out = [];
  while (s.step()) out.push(s.get());
  s.reset();
  return out;
}

/** A page of `limit` keys: from the start, after, from or before a key. */
function keys({ after, from, before }, limit) {
  const cols = 'SELECT k, length(v) FROM kv';
  let got;
  let prev;
  let next;
  if (before !== undefined) {
    got = all(`${cols} WHERE k < ? ORDER BY k DESC LIMIT ?`, [before, limit + 1]);
    prev = got.length > limit;
    got = got.slice(0, limit).reverse();
    next = true;
  } else {
    if (after !== undefined) got = all(`${cols} WHERE k > ? ORDER BY k LIMIT ?`, [after, limit + 1]);
    else if (from !== undefined) got = all(`${cols} WHERE k >= ? ORDER BY k LIMIT ?`, [from, limit + 1]);
    else got = all(`${cols} ORDER BY k LIMIT ?`, [limit + 1]);
    next = got.length > limit;
    got = got.slice(0, limit);
    prev = after !== undefined || (from !== undefined && got.length > 0 && all('SELECT 1 FROM kv WHERE k < ? LIMIT 1', [got[0][0]]).length > 0);
  }
  return { rows: got.map(([key, length]) => ({ key, length })), prev, next };
}

async function open(source, limit) {
  const t0 = performance.now();
  let bytes;
  if (source.file) bytes = await source.file.arrayBuffer();
  else {
    const res = await fetch(source.url, { cache: 'no-store' });
    if (!res.ok) throw Object.assign(new Error(`${source.url}: the server answered ${res.status}`), { name: 'HttpError' });
    bytes = await res.arrayBuffer();
  }
  read = { bytes: bytes.byteLength, reads: 1 };
  const readMs = performance.now() - t0;
  const SQL = await ready;
  const initMs = performance.now() - t0;
  db = new SQL.Database(new Uint8Array(bytes));
  bytes = null;
  const openMs = performance.now() - t0;
  const one = (sql) => db.exec(sql)[0]?.values[0][0] ?? null;
  const summary = {
    fileBytes: read.bytes,
    pageSize: one('PRAGMA page_size'),
    pageCount: one('PRAGMA page_count'),
    tables: db.exec("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")[0]?.values.map(([n]) => n) ?? [],
  };
  const page = keys({}, limit);
  // Where the time went, from the message's arrival: the file read, sql.js ready, the database opened, the first page.
  summary.workerMs = { read: readMs, init: initMs, open: openMs, page: performance.now() - t0 };
  return { summary, page };
}

const ops = { open, keys: (ask, limit) => keys(ask, limit) };

self.onmessage = async ({ data: { id, op, args } }) => {
  try {
    const result = await ops[op](...args);
    postMessage({ id, ok: true, result, read });
  } catch (e) {
    postMessage({ id, ok: false, error: { name: e?.name ?? 'Error', message: e?.message ?? String(e) }, read });
  }
};
