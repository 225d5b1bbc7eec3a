// Opens object stores by URL inside a Web Worker (ObjectStore.fromUrl:
// HTTP range requests, each file fetched by name on first use) one step at
// a time, so that chromium.test.mjs can compare what the server sent
// during each step with what the store counted. A step is a message
// { step, ... }; the reply is { ok, out } or { ok: false, error }.
import init, { ObjectStore } from '/pkg/bale_wasm.js';
import { hex, runObjectCorpus } from '/tests/wasm/corpus.js';

const ready = init();
// The store the lazy steps share, opened by `open`.
let store;

const counters = (s) => ({ bytes: s.bytesRead, reads: s.readCount, fileBytes: s.fileBytes });
const failure = (f) => {
  try {
    f();
    return 'no error';
  } catch (e) {
    return { name: e.name, code: e.code, message: e.message };
  }
};

const steps = {
  // One corpus case by URL, through the corpus procedure: a directory
  // store by its base URL (ending in /), a single-file store by its file.
  async case({ corpus, c }) {
    const url = c.single_file ? `${corpus}${c.file}` : `${corpus}${c.file}/`;
    const expected = async (x) => (await fetch(`${corpus}${x.expect}`)).json();
    const [r] = await runObjectCorpus({ object_cases: [c] }, () => ObjectStore.fromUrl(url), expected);
    return r;
  },
  open({ url }) {
    store = ObjectStore.fromUrl(url);
    return { ...counters(store), hash: store.hash, singleFile: store.singleFile };
  },
  list() {
    const ids = store.ids();
    const page = store.list({ limit: 3 });
    const tail = store.list({ limit: 3, reverse: true });
    const metas = ids.map((id) => store.meta(id));
    return { ids, page: page.map((m) => m.id), tail: tail.map((m) => m.id), metas, ...counters(store) };
  },
  overview() {
    return { overview: store.overview(), ...counters(store) };
  },
  read() {
    const objects = store.ids().map((id) => [id, hex(store.get(id, { verify: true }))]);
    return { objects, ...counters(store) };
  },
  check() {
    const files = store.files();
    const calls = [];
    const report = store.validate({ onProgress: (done, total) => calls.push([done, total]) });
    store.close();
    return { files, report, calls };
  },
  // A store whose pack is missing: it opens and lists; reading an object
  // in the pack gives the core's error, twice, without asking the server
  // again.
  missing({ url }) {
    const s = ObjectStore.fromUrl(url);
    try {
      const ids = s.ids();
      const packed = ids.map((id) => s.meta(id)).filter((m) => m.packed && m.size > 0);
      const first = failure(() => s.get(packed[0].id));
      const again = failure(() => s.get(packed[0].id));
      return { ids, packed: packed.length, first, again, files: s.files(), report: s.validate(), ...counters(s) };
    } finally {
      s.close();
    }
  },
  refusals({ notThere, notThereFile, noRange, good }) {
    return {
      notThere: failure(() => ObjectStore.fromUrl(notThere)),
      notThereFile: failure(() => ObjectStore.fromUrl(notThereFile)),
      noRange: failure(() => ObjectStore.fromUrl(noRange)),
      badOption: failure(() => ObjectStore.fromUrl(good, { chunkBytes: 1000 })),
      badProgress: failure(() => {
        const s = ObjectStore.fromUrl(good);
        try {
          s.validate({ onProgress: 1 });
        } finally {
          s.close();
        }
      }),
      thrown: failure(() => {
        const s = ObjectStore.fromUrl(good);
        let calls = 0;
        try {
          s.validate({
            onProgress: () => {
              calls += 1;
              throw new Error(`stop after ${calls} call`);
            },
          });
        } finally {
          s.close();
        }
      }),
    };
  },
};

self.onmessage = async ({ data }) => {
  try {
    await ready;
    self.postMessage({ ok: true, out: await steps[data.step](data) });
  } catch (e) {
    self.postMessage({ ok: false, error: { name: e.name, code: e.code, message: e.message, stack: e.stack } });
  }
};
