// The inspector's worker: opens the chosen File lazily (FileReaderSync
// slices through bale's Blob backend) and answers the page's questions.
// Nothing is uploaded anywhere and the file is never modified.
import init, { Store } from '../pkg/bale_wasm.js';

const ready = init();
let store = null;

const FIRST_KEYS = 50;
const PREVIEW = 24;

function errorInfo(e) {
  return e instanceof Error
    ? { name: e.name, code: e.code ?? null, message: e.message }
    : { name: 'Error', code: null, message: String(e) };
}

function counters() {
  return { bytes: store.bytesRead, reads: store.readCount };
}

function lookup(key) {
  store.resetCounters();
  const length = store.valueLength(key);
  const preview = length === undefined ? null : store.getRange(key, 0, PREVIEW);
  return { key, found: length !== undefined, length: length ?? null, preview, read: counters() };
}

async function openFile(file, key) {
  await ready;
  if (store) store.close();
  store = null;
  const out = { name: file.name, size: file.size };
  store = Store.fromBlob(file);
  out.open = counters();
  out.pageSize = store.pageSize;
  out.formatVersion = store.formatVersion;
  out.count = store.count;
  if (key) {
    // Open + this one lookup, before anything else touches the file.
    out.lookup = lookup(key);
    out.openAndLookup = { bytes: out.open.bytes + out.lookup.read.bytes, reads: out.open.reads + out.lookup.read.reads };
  }
  store.resetCounters();
  out.keys = [];
  for (const k of store.keys({ limit: FIRST_KEYS })) {
    out.keys.push({ key: k, length: store.valueLength(k) });
  }
  out.listing = counters();
  store.resetCounters();
  out.stat = store.stat();
  out.statRead = counters();
  out.cache = store.cacheStats();
  return out;
}

self.onmessage = async (ev) => {
  const { id, op } = ev.data;
  try {
    let result;
    if (op === 'open') result = await openFile(ev.data.file, ev.data.key);
    else if (op === 'get') {
      if (!store) throw new Error('no store is open');
      result = lookup(ev.data.key);
    } else if (op === 'check') {
      if (!store) throw new Error('no store is open');
      store.resetCounters();
      result = { report: store.check(), read: counters() };
    } else throw new Error(`unknown op ${op}`);
    self.postMessage({ id, ok: true, result });
  } catch (e) {
    self.postMessage({ id, ok: false, error: errorInfo(e) });
  }
};
