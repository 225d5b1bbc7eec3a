// The inspector's Web Worker: it opens one bale file or store (a File, the
// Files of a folder, or a URL read with range requests) and answers the
// page's questions about it, reading only what each answer needs. Every
// answer carries the bytes read so far, so the page's counter is exact.
//
// Messages in: { id, op, args }. Out: { id, ok, result, read } or
// { id, ok: false, error, read }, and { id, progress: [done, total] }
// while a long operation runs.
import init, { Bitable, ObjectStore, Store } from '../pkg/bale_wasm.js';

const ready = init();

/** `\x89BALE\r\n\x1a`: the first 8 bytes of every bale file. */
const MAGIC = [0x89, 0x42, 0x41, 0x4c, 0x45, 0x0d, 0x0a, 0x1a];
/** Bytes read to tell the kind (the header's magic, kind and version). */
const SNIFF = 16;
/** A single-file object store is a tree store holding this key (128 bytes). */
const OBJECT_CONFIG_KEY = 'config';
const OBJECT_CONFIG_BYTES = 128;

let opened = null;
/** Bytes read outside the store's own counters (sniffing the header). */
let extra = { bytes: 0, reads: 0 };

function baleError(code, message, page) {
  return Object.assign(new Error(`${code}: ${message}`), { name: 'BaleError', code, page });
}

function sniffFile(file) {
  const bytes = new Uint8Array(new FileReaderSync().readAsArrayBuffer(file.slice(0, SNIFF)));
  extra.bytes += bytes.length;
  extra.reads++;
  return bytes;
}

async function sniffUrl(url) {
  let res;
  try {
    res = await fetch(url, { headers: { Range: `bytes=0-${SNIFF - 1}` }, cache: 'no-store' });
  } catch (e) {
    throw baleError('IO', `${url}: ${e.message}`);
  }
  if (res.status === 404) throw baleError('NOT_FOUND', `${url}: the server has no such file`);
  if (res.status !== 206) {
    await res.body?.cancel();
    if (res.ok) throw baleError('IO', `${url}: the server does not honour Range requests (status ${res.status})`);
    throw baleError('IO', `${url}: the server answered ${res.status} ${res.statusText}`);
  }
  const bytes = new Uint8Array(await res.arrayBuffer());
  extra.bytes += bytes.length;
  extra.reads++;
  return bytes;
}

/** 'TREE', 'BTBL', 'OBJS', 'PACK', or null when the bytes are no bale file. */
function kindOf(head) {
  if (head.length < 12 || MAGIC.some((b, i) => head[i] !== b)) return null;
  return String.fromCharCode(...head.subarray(8, 12));
}

/** Lazily read sources: the File, or the URL string. */
function openTree(src) {
  return src.url !== undefined ? Store.fromUrl(src.url) : Store.fromBlob(src.file);
}

function openBitable(src) {
  return src.url !== undefined ? Bitable.fromUrl(src.url) : Bitable.fromBlob(src.file);
}

/** What the page is told about the store it opened. */
function summary(o) {
  const base = { kind: o.kind, name: o.name, fileBytes: o.fileBytes };
  if (o.kind === 'tree') {
    const s = o.store;
    return { ...base, formatVersion: s.formatVersion, pageSize: s.pageSize, count: s.count, objects: Boolean(o.objects) };
  }
  if (o.kind === 'bitable') {
    const t = o.table;
    return { ...base, formatVersion: t.formatVersion, pageSize: t.pageSize, count: t.count };
  }
  const s = o.objects;
  return { ...base, formatVersion: s.formatVersion, hash: s.hash, singleFile: s.singleFile, filesFound: Boolean(o.filesFound) };
}

/**
 * Opens what the page picked: { file } | { files, name } | { url }. A URL
 * ending in `/` is an object store's folder, whose files are found by name
 * as they are needed (`filesFound`: its size is that of the files opened
 * so far).
 */
async function openSource(src) {
  extra = { bytes: 0, reads: 0 };
  if (src.files !== undefined) {
    const store = ObjectStore.fromFiles(src.files);
    return { kind: 'objects', name: src.name, objects: store, fileBytes: store.fileBytes };
  }
  if (src.url?.endsWith('/')) {
    const store = ObjectStore.fromUrl(src.url);
    return { kind: 'objects', name: src.url, objects: store, fileBytes: store.fileBytes, filesFound: true };
  }
  const name = src.url ?? src.file.name;
  const head = src.url !== undefined ? await sniffUrl(src.url) : sniffFile(src.file);
  const kind = kindOf(head);
  if (kind === 'BTBL') {
    const table = openBitable(src);
    return { kind: 'bitable', name, table, fileBytes: table.fileBytes };
  }
  if (kind === 'OBJS' || kind === 'PACK') {
    const what = kind === 'OBJS' ? "an object store's config file" : "an object store's pack file";
    throw baleError('INVALID_ARGUMENT', `${name} is ${what}: open the store's whole folder instead`);
  }
  // A tree store, or no bale file at all: the core says which, with its code.
  const store = openTree(src);
  const o = { kind: 'tree', name, store, fileBytes: store.fileBytes };
  try {
    if (store.valueLength(OBJECT_CONFIG_KEY) === OBJECT_CONFIG_BYTES) {
      o.objects = src.url !== undefined ? ObjectStore.fromUrl(src.url) : ObjectStore.fromBlob(src.file);
    }
  } catch {
    // A damaged tree (its views say where), or a tree store that holds
    // such a key: shown as a tree store.
  }
  return o;
}

/**
 * Bytes and reads since the store was opened, sniffing included, and the
 * size of what is open (which grows for a folder read by URL).
 */
function readSoFar() {
  if (!opened) return { ...extra };
  let bytes = extra.bytes;
  let reads = extra.reads;
  for (const s of [opened.store, opened.table, opened.objects]) {
    if (!s) continue;
    bytes += s.bytesRead;
    reads += s.readCount;
  }
  return { bytes, reads, fileBytes: opened.filesFound ? opened.objects.fileBytes : opened.fileBytes };
}

const keyLength = (o, key) => (o.kind === 'bitable' ? o.table.valueLength(key) : o.store.valueLength(key));

/**
 * One page of keys: `options` are the range options (bounds, prefix,
 * reverse); one more than `limit` is asked to know whether more follow.
 */
function keyPage(o, options, limit) {
  const src = o.kind === 'bitable' ? o.table : o.store;
  const keys = src.keys({ ...options, limit: limit + 1 }).toArray();
  const more = keys.length > limit;
  if (more) keys.pop();
  const rows = keys.map((key) => ({ key, length: keyLength(o, key) }));
  if (o.kind === 'bitable' && rows.length > 0) {
    const first = o.table.rank(rows[0].key);
    rows.forEach((r, i) => (r.rank = options.reverse ? first - i : first + i));
  }
  return { rows, more };
}

function need(o, what) {
  const ok = { tree: o.kind === 'tree', bitable: o.kind === 'bitable', objects: Boolean(o.objects) }[what];
  if (!ok) throw baleError('INVALID_ARGUMENT', `this ${o.kind} has no ${what} view`);
}

/** Operations on the open store, by name: (opened, args, progress) => result. */
const OPS = {
  keys: (o, [options, limit]) => keyPage(o, options ?? {}, limit),
  valueLength: (o, [key]) => keyLength(o, key) ?? null,
  value: (o, [key, offset, length]) => (o.kind === 'bitable' ? o.table : o.store).getRange(key, offset, length) ?? null,
  stat: (o) => (need(o, 'tree'), o.store.stat()),
  estimate: (o, [options]) => (need(o, 'tree'), o.store.estimate(options)),
  check: (o, [options], progress) => {
    if (o.kind === 'bitable') return o.table.check(progress);
    need(o, 'tree');
    return o.store.check({ ...options, onProgress: progress });
  },
  cacheStats: (o) => (o.kind === 'bitable' ? o.table : o.store)?.cacheStats(),
  bitableStats: (o) => (need(o, 'bitable'), o.table.stats()),
  rank: (o, [key]) => (need(o, 'bitable'), o.table.rank(key)),
  select: (o, [n]) => {
    need(o, 'bitable');
    const c = o.table.select(n);
    try {
      return c.valid ? { key: c.key, length: c.valueLength, rank: n } : null;
    } finally {
      c.free();
    }
  },
  objectOverview: (o) => (need(o, 'objects'), o.objects.overview()),
  objectStats: (o) => (need(o, 'objects'), o.objects.stats()),
  objectList: (o, [options]) => (need(o, 'objects'), o.objects.list(options)),
  objectMeta: (o, [id]) => (need(o, 'objects'), o.objects.meta(id)),
  objectChunks: (o, [id, options]) => (need(o, 'objects'), o.objects.chunks(id, options)),
  objectRange: (o, [id, offset, length]) => (need(o, 'objects'), o.objects.getRange(id, offset, length)),
  objectFiles: (o, _args, progress) => (need(o, 'objects'), o.objects.files({ onProgress: progress })),
  objectValidate: (o, [options], progress) => (need(o, 'objects'), o.objects.validate({ ...options, onProgress: progress })),
};

function close() {
  for (const s of [opened?.store, opened?.table, opened?.objects]) {
    try {
      s?.close();
    } catch {
      // Closing twice, or a store that failed: nothing left to free.
    }
  }
  opened = null;
}

/** The distinct buffers of the byte arrays in a result, to transfer. */
function buffers(value, out = new Set()) {
  if (ArrayBuffer.isView(value)) out.add(value.buffer);
  else if (Array.isArray(value)) for (const v of value) buffers(v, out);
  else if (value && typeof value === 'object') for (const v of Object.values(value)) buffers(v, out);
  return out;
}

function errorInfo(e) {
  if (!(e instanceof Error)) return { name: 'Error', message: String(e) };
  return { name: e.name, message: e.message, code: e.code, page: e.page };
}

async function run(id, op, args) {
  await ready;
  if (op === 'open') {
    close();
    opened = await openSource(args[0]);
    return summary(opened);
  }
  if (op === 'close') return close();
  if (!opened) throw baleError('CLOSED', 'no store is open');
  if (!Object.hasOwn(OPS, op)) throw baleError('INVALID_ARGUMENT', `unknown operation ${op}`);
  let last = 0;
  const progress = (done, total) => {
    // A bar needs a few hundred steps at most.
    const now = Date.now();
    if (done < total && now - last < 50) return;
    last = now;
    self.postMessage({ id, progress: [done, total], read: readSoFar() });
  };
  return OPS[op](opened, args, progress);
}

self.onmessage = async ({ data: { id, op, args } }) => {
  try {
    const result = await run(id, op, args ?? []);
    self.postMessage({ id, ok: true, result, read: readSoFar() }, [...buffers(result)]);
  } catch (e) {
    self.postMessage({ id, ok: false, error: errorInfo(e), read: readSoFar() });
  }
};
