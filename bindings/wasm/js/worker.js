// WorkerStore: a store that runs in a Web Worker (store-worker.js), driven
// from the main thread through Promises. The worker reads a File or Blob
// lazily (FileReaderSync exists only there) and never blocks the page.
// Errors keep their name, code and page across the worker boundary; byte
// arrays coming back are transferred, and ones passed in through
// transfer() are transferred instead of copied.

/** The Store methods a WorkerStore forwards (worker.d.ts has their types). */
const CALLS = [
  'get', 'has', 'valueLength', 'getRange', 'range', 'keys', 'put', 'delete', 'commit', 'abort', 'toBytes',
  'stat', 'estimate', 'cacheStats', 'resetCounters',
];

const toTransfer = new WeakSet();

/**
 * Marks a Uint8Array (or ArrayBuffer) argument so that its buffer moves to
 * the worker instead of being copied: afterwards it is detached (empty)
 * here. Returns its argument.
 */
export function transfer(bytes) {
  toTransfer.add(bytes);
  return bytes;
}

/** A BaleError-shaped Error, as the package throws them. */
function baleError(code, message) {
  return Object.assign(new Error(`${code}: ${message}`), { name: 'BaleError', code });
}

/** An Error rebuilt from the worker's plain-data copy. */
function fromInfo(info) {
  const e = new Error(info.message);
  e.name = info.name;
  if (info.code !== undefined) e.code = info.code;
  if (info.page !== undefined) e.page = info.page;
  return e;
}

export class WorkerStore {
  #worker;
  #pending = new Map();
  #nextId = 1;
  #closed = false;
  /** What refreshInfo() last returned (at first, what open() did). */
  info;

  /** Use WorkerStore.open() or WorkerStore.create(). */
  constructor(workerUrl) {
    this.#worker = new Worker(workerUrl ?? new URL('./store-worker.js', import.meta.url), { type: 'module' });
    this.#worker.onmessage = ({ data }) => {
      const p = this.#pending.get(data.id);
      if (!p) return;
      if (data.progress) {
        p.onProgress?.(...data.progress);
        return;
      }
      this.#pending.delete(data.id);
      if (data.ok) p.resolve(data.result);
      else p.reject(fromInfo(data.error));
    };
    this.#worker.onerror = (ev) => {
      ev.preventDefault();
      this.#fail(baleError('IO', `the bale worker failed: ${ev.message || 'its script did not load'}`));
    };
    this.#worker.onmessageerror = () => this.#fail(baleError('IO', 'a message from the bale worker could not be read'));
  }

  /**
   * Opens a store in a new worker: a File or Blob (read lazily there;
   * options: chunkBytes, cacheBytes) or bytes (options: writable).
   */
  static open(source, options, workerUrl) {
    return new WorkerStore(workerUrl).#start('open', [source, options]);
  }

  /** A new writable store in memory, in a new worker. */
  static create(options, workerUrl) {
    return new WorkerStore(workerUrl).#start('create', [options]);
  }

  // get, has, valueLength, getRange, range and keys (every entry in an
  // array: page with gt and limit), put, delete, commit, abort, toBytes,
  // stat, estimate, cacheStats, resetCounters: the Store method of that name,
  // run in the worker, its result in a Promise.
  static {
    for (const op of CALLS) {
      this.prototype[op] = function (...args) {
        return this.#call(op, args);
      };
    }
  }

  /**
   * Store.check in the worker: `pageMap` as there; `onProgress(done, total)`
   * is called here, from progress messages the worker sends.
   */
  check(options) {
    if (options === undefined || options === null) return this.#call('check', []);
    const { onProgress, ...rest } = options;
    if (onProgress !== undefined && typeof onProgress !== 'function') {
      return Promise.reject(baleError('INVALID_ARGUMENT', 'onProgress must be a function (pagesDone, pagesTotal) => void'));
    }
    return this.#call('check', [rest], onProgress);
  }

  async #start(op, args) {
    try {
      this.info = await this.#call(op, args);
    } catch (e) {
      this.#end();
      throw e;
    }
    return this;
  }

  #fail(e) {
    for (const p of this.#pending.values()) p.reject(e);
    this.#pending.clear();
    this.#end();
  }

  #end() {
    this.#closed = true;
    this.#worker.terminate();
  }

  #call(op, args = [], onProgress) {
    if (this.#closed) return Promise.reject(baleError('CLOSED', 'the store is closed'));
    const id = this.#nextId++;
    const moved = new Set();
    for (const a of args) {
      if (toTransfer.has(a)) moved.add(ArrayBuffer.isView(a) ? a.buffer : a);
    }
    return new Promise((resolve, reject) => {
      try {
        this.#worker.postMessage({ id, op, args, withProgress: Boolean(onProgress) }, [...moved]);
      } catch (e) {
        reject(baleError('INVALID_ARGUMENT', `cannot send this argument to the worker: ${e.message}`));
        return;
      }
      this.#pending.set(id, { resolve, reject, onProgress });
    });
  }

  /** Whether close() was called (or the worker failed). */
  get closed() {
    return this.#closed;
  }

  /** count, pageSize, formatVersion, fileBytes, writable, inTransaction, bytesRead, readCount, now. */
  refreshInfo() {
    return this.#call('info').then((info) => (this.info = info));
  }

  /** Closes the store and ends its worker; later calls reject with CLOSED. */
  async close() {
    if (this.#closed) return;
    try {
      await this.#call('close');
    } finally {
      this.#end();
    }
  }
}
