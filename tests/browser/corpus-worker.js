// Walks the golden corpus inside a Web Worker: each case file is fetched as
// a Blob and opened through bale's lazy Blob backend (FileReaderSync); then
// runs the range queries of the cases that have them the same way. Object
// store cases too: each file the manifest lists for a directory store is
// fetched as a Blob (a server cannot list a directory) and the store opened
// from the map of them, lazily; a single-file store from its Blob. And
// every bitable case, each from its Blob: a valid case's result carries the
// SHA-256 of the canonical JSON it read, for the test to compare with the
// expected document itself. And every remote case: its folder opened by
// URL (RemoteObjects.fromUrl), listed, and each object read by ranges.
import init, { Bitable, ObjectStore, RemoteObjects, Store } from '/pkg/bale_wasm.js';
import { runBitableCorpus, runCorpus, runObjectCorpus, runQueries, runRemoteCorpus } from '/tests/wasm/corpus.js';

async function sha256(text) {
  const d = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text));
  return [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

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
    const open = async (c) => Store.fromBlob(await (await fetchOk(c.file)).blob());
    const expected = async (c) => (await fetchOk(c.expect)).json();
    const results = await runCorpus(manifest, open, expected);
    const queries = await runQueries(manifest, open, async (c) => (await fetchOk(c.queries)).json(), expected);
    const blob = async (path) => (await fetchOk(path)).blob();
    const openObjects = async (c) => {
      if (c.single_file) return ObjectStore.fromBlob(await blob(c.file));
      const files = new Map();
      for (const f of c.files) files.set(f, await blob(`${c.file}/${f}`));
      return ObjectStore.fromFiles(files);
    };
    const objects = await runObjectCorpus(manifest, openObjects, expected);
    const bitables = await runBitableCorpus(manifest, async (c) => Bitable.fromBlob(await blob(c.file)), expected, true);
    for (const r of bitables) {
      if (r.document !== undefined) r.digest = await sha256(r.document);
      delete r.document;
    }
    const openRemote = (c) => RemoteObjects.fromUrl(new URL(`${base}${c.file}/`, self.location.href).href);
    const remotes = await runRemoteCorpus(manifest, openRemote, expected);
    self.postMessage({ ok: true, results, queries, objects, bitables, remotes });
  } catch (e) {
    self.postMessage({ ok: false, error: `${e.name}: ${e.message}` });
  }
};
