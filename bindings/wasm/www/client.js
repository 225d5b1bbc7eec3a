// The page's side of the inspector worker: each call is a Promise, progress
// reports go to the caller's callback, and every answer updates the
// bytes-read counter. `stop()` ends the worker (a long check, or a file
// that makes the worker work too long); the next open starts a new one.

/** An Error rebuilt from the worker's plain-data copy (code and page kept). */
function fromInfo(info) {
  const e = new Error(info.message);
  e.name = info.name;
  if (info.code !== undefined) e.code = info.code;
  if (info.page !== undefined && info.page !== null) e.page = info.page;
  return e;
}

export class Inspector {
  #worker = null;
  #pending = new Map();
  #next = 1;
  /** Called with { bytes, reads } after every answer and progress report. */
  onRead = () => {};

  #start() {
    const w = new Worker(new URL('./inspector-worker.js', import.meta.url), { type: 'module' });
    w.onmessage = ({ data }) => {
      if (data.read) this.onRead(data.read);
      const p = this.#pending.get(data.id);
      if (!p) return;
      if (data.progress) {
        p.progress?.(...data.progress);
        return;
      }
      this.#pending.delete(data.id);
      if (data.ok) p.resolve(data.result);
      else p.reject(fromInfo(data.error));
    };
    w.onerror = (ev) => {
      ev.preventDefault();
      this.#fail(Object.assign(new Error(`the inspector's worker failed: ${ev.message || 'it did not load'}`), { code: 'IO' }));
    };
    this.#worker = w;
  }

  #fail(e) {
    for (const p of this.#pending.values()) p.reject(e);
    this.#pending.clear();
    this.#worker?.terminate();
    this.#worker = null;
  }

  /** Runs `op` in the worker; `progress(done, total)` hears long ones. */
  call(op, args = [], progress) {
    if (!this.#worker) this.#start();
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject, progress });
      this.#worker.postMessage({ id, op, args });
    });
  }

  /** Opens a source ({ file } | { files, name } | { url }) in a fresh worker. */
  open(source) {
    this.stop('a new file was opened');
    return this.call('open', [source]);
  }

  /** Ends the worker now: whatever it was doing rejects with CANCELLED. */
  stop(why = 'stopped') {
    if (this.#worker) this.#fail(Object.assign(new Error(`CANCELLED: ${why}`), { code: 'CANCELLED' }));
  }
}
