// Walks the golden corpus inside a Web Worker: each case file is fetched as
// a Blob and opened through bale's lazy Blob backend (FileReaderSync).
import init, { Store } from '/pkg/bale_wasm.js';
import { runCorpus } from '/tests/wasm/corpus.js';

self.onmessage = async (ev) => {
  try {
    await init();
    const base = ev.data.corpus;
    const res = await fetch(`${base}manifest.json`);
    if (!res.ok) throw new Error(`corpus manifest: HTTP ${res.status}`);
    const manifest = await res.json();
    const fetchOk = async (path) => {
      const r = await fetch(base + path);
      if (!r.ok) throw new Error(`${path}: HTTP ${r.status}`);
      return r;
    };
    const results = await runCorpus(
      manifest,
      async (c) => Store.fromBlob(await (await fetchOk(c.file)).blob()),
      async (c) => (await fetchOk(c.expect)).json(),
    );
    self.postMessage({ ok: true, results });
  } catch (e) {
    self.postMessage({ ok: false, error: `${e.name}: ${e.message}` });
  }
};
