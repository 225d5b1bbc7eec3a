// Opens stores and bitables by URL inside a Web Worker (HTTP range
// requests, bale-wasm's Store.fromUrl and Bitable.fromUrl) and reports what
// each read and how many bytes it fetched, or the error it gave.
import init, { Bitable, Store } from '/pkg/bale_wasm.js';

const text = (b) => (b === undefined ? undefined : new TextDecoder().decode(b));
const failure = (f) => {
  try {
    f();
    return 'opened';
  } catch (e) {
    return { name: e.name, code: e.code, message: e.message };
  }
};

self.onmessage = async ({ data }) => {
  try {
    await init();
    const out = {};
    // A large store: one lookup, then the first keys.
    const s = Store.fromUrl(data.big.url);
    out.big = { value: text(s.get(data.big.key)), bytes: s.bytesRead, reads: s.readCount };
    out.big.firstKeys = [...s.keys({ limit: 3 })].map(text);
    out.big.totalBytes = s.bytesRead;
    s.close();
    // A corpus store and bitable, each compared with its Blob twin.
    const t = Store.fromUrl(data.store.url);
    out.store = { keys: [...t.keys()].map(text) };
    t.close();
    const b = Bitable.fromUrl(data.bitable.url);
    const hex = (u) => [...u].map((x) => x.toString(16).padStart(2, '0')).join('');
    out.bitable = { count: b.count, first: hex(b.select(0).key), bytes: b.bytesRead };
    b.close();
    out.missing = failure(() => Store.fromUrl(data.missing));
    out.noRange = failure(() => Store.fromUrl(data.noRange));
    out.notBale = failure(() => Store.fromUrl(data.notBale));
    self.postMessage({ ok: true, out });
  } catch (e) {
    self.postMessage({ ok: false, error: { name: e.name, code: e.code, message: e.message, stack: e.stack } });
  }
};
