// The Web Worker behind WorkerStore (worker.js): it holds one store and
// answers { id, op, args } with { id, ok, result } or { id, ok: false,
// error }. A File or Blob is read here, lazily, with FileReaderSync (which
// the main thread lacks). The byte arrays of results are transferred, not
// copied: each is a fresh buffer made for this answer.
import init, { Store, open } from '../pkg/bale_wasm.js';

const ready = init().catch((e) => {
  throw Object.assign(new Error(`IO: the bale WebAssembly module did not load in the worker: ${e.message}`), {
    name: 'BaleError',
    code: 'IO',
  });
});
let store = null;
/** Result buffers moved to the main thread (detached here by the transfer). */
const transferred = { buffers: 0, bytes: 0 };

/** How the worker opens its store, by op. */
const OPENERS = {
  // A Blob or File lazily (FileReaderSync exists here), or bytes.
  open: (source, options) => open(source, options),
  create: (options) => Store.create(options),
};

/** Everything else a WorkerStore asks, run on the open store. */
const CALLS = {
  get: (s, key) => s.get(key),
  has: (s, key) => s.has(key),
  valueLength: (s, key) => s.valueLength(key),
  getRange: (s, key, offset, length) => s.getRange(key, offset, length),
  range: (s, options) => s.range(options).toArray(),
  keys: (s, options) => s.keys(options).toArray(),
  put: (s, key, value) => s.put(key, value),
  delete: (s, key) => s.delete(key),
  commit: (s) => s.commit(),
  abort: (s) => s.abort(),
  toBytes: (s) => s.toBytes(),
  stat: (s) => s.stat(),
  estimate: (s, options) => s.estimate(options),
  // onProgress cannot cross to the worker: the page's WorkerStore asks for
  // progress messages instead (withProgress) and keeps the function.
  check: (s, options, progress) => s.check(options === undefined ? undefined : { ...options, ...(progress ? { onProgress: progress } : {}) }),
  cacheStats: (s) => s.cacheStats(),
  resetCounters: (s) => s.resetCounters(),
  info: (s) => ({
    count: s.count,
    pageSize: s.pageSize,
    formatVersion: s.formatVersion,
    fileBytes: s.fileBytes,
    writable: s.writable,
    inTransaction: s.inTransaction,
    bytesRead: s.bytesRead,
    readCount: s.readCount,
    transferredBuffers: transferred.buffers,
    transferredBytes: transferred.bytes,
  }),
  close: (s) => {
    s.close();
    store = null;
  },
};

/** The distinct buffers of the byte arrays in a result, to transfer. */
function buffers(value, out = new Set()) {
  if (ArrayBuffer.isView(value)) out.add(value.buffer);
  else if (Array.isArray(value)) for (const v of value) buffers(v, out);
  return out;
}

/** An error as plain data: its code and page survive the trip. */
function errorInfo(e) {
  if (!(e instanceof Error)) return { name: 'Error', message: String(e) };
  return { name: e.name, message: e.message, code: e.code, page: e.page };
}

function run(op, args, progress) {
  if (Object.hasOwn(OPENERS, op)) {
    if (store) throw new Error(`this worker already holds a store (${op})`);
    store = OPENERS[op](...args);
    return CALLS.info(store);
  }
  if (!Object.hasOwn(CALLS, op)) throw new Error(`unknown operation ${op}`);
  if (!store) throw new Error(`no store is open (${op})`);
  return op === 'check' ? CALLS.check(store, args[0], progress) : CALLS[op](store, ...args);
}

self.onmessage = async ({ data: { id, op, args, withProgress } }) => {
  try {
    await ready;
    const progress = withProgress ? (done, total) => self.postMessage({ id, progress: [done, total] }) : undefined;
    const result = run(op, args, progress);
    const moved = [...buffers(result)];
    const sizes = moved.map((b) => b.byteLength);
    self.postMessage({ id, ok: true, result }, moved);
    moved.forEach((b, i) => {
      if (b.byteLength === 0 && sizes[i] > 0) {
        transferred.buffers++;
        transferred.bytes += sizes[i];
      }
    });
  } catch (e) {
    self.postMessage({ id, ok: false, error: errorInfo(e) });
  }
};
