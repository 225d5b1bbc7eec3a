// The golden-corpus procedure (tests/corpus/manifest.json, `_comment`) for
// the wasm package, shared by the Node test and the browser worker: open a
// case read-only, read every entry in key order with its value whole, and
// compare with the expected canonical JSON, or check that the first error
// raised by those steps has the expected code; then run each range query
// of a case and compare its keys (or its error code). Object store cases
// (`object_cases`) the same way: open read-only, list the ids, read each
// object whole, verified against its id. Bitable cases (`bitable_cases`):
// open read-only, read every pair in key order with its value whole, look
// every key up again, and answer each probe (rank, lower bound, found).
// Remote cases (`remote_cases`): open the folder over HTTP
// (RemoteObjects), list the ids in order, read each object whole.

export function hex(bytes) {
  let s = '';
  for (const b of bytes) s += b.toString(16).padStart(2, '0');
  return s;
}

/** JSON with object keys sorted, so that documents compare as strings. */
export function canonical(v) {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') {
    return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

/** The expected-JSON document of an open store, every value read whole. */
export function readStore(store) {
  const entries = [];
  for (const [k, v] of store.range()) entries.push([hex(k), hex(v)]);
  return {
    kind: 'store',
    format_version: store.formatVersion,
    page_size: store.pageSize,
    count: store.count,
    entries,
  };
}

/**
 * Walks `cases`: `openCase(c)` opens case `c` (it may throw: that is the
 * first error of the procedure), `read(store, c)` reads it into the
 * expected document's shape, `expected(c)` returns the parsed expected
 * document of a valid case. Resolves to one result per case: { id, kind,
 * ok, detail, bytesRead, fileBytes, code } (`code`: of the error thrown),
 * and with `keep` the canonical JSON of what a valid case read (`document`).
 */
async function walk(cases, openCase, read, expected, counted, keep = false) {
  const results = [];
  for (const c of cases) {
    const r = { id: c.id, kind: c.expect ? 'valid' : 'invalid', ok: false, detail: '' };
    let store = null;
    let doc = null;
    let err = null;
    try {
      store = await openCase(c);
      doc = await read(store, c);
    } catch (e) {
      err = e;
      r.code = e?.code;
    }
    if (store) {
      r.bytesRead = store.bytesRead;
      r.fileBytes = store.fileBytes;
      store.close();
    }
    if (c.expect) {
      if (err) {
        r.detail = `unexpected error: ${err.code ?? ''} ${err.message ?? err}`;
      } else {
        const want = await expected(c);
        r.ok = canonical(doc) === canonical(want);
        if (keep) r.document = canonical(doc);
        r.detail = r.ok ? counted(doc) : `content differs from ${c.expect}`;
      }
    } else if (!err) {
      r.detail = `read without error, expected ${c.error}`;
    } else if (!(err instanceof Error) || err.name !== 'BaleError') {
      r.detail = `threw a non-BaleError: ${String(err)}`;
    } else {
      r.ok = err.code === c.error;
      r.detail = r.ok ? err.code : `got ${err.code} (${err.message}), expected ${c.error}`;
    }
    results.push(r);
  }
  return results;
}

/**
 * Runs every tree-store case (`cases`). `openCase(c)` returns an open
 * Store for case `c`; `expected(c)` as for walk().
 */
export function runCorpus(manifest, openCase, expected) {
  return walk(manifest.cases, openCase, readStore, expected, (d) => `${d.count} ${d.count === 1 ? 'entry' : 'entries'}`);
}

/**
 * The expected-JSON document of an open object store: every object read
 * whole and verified against its id, in id order.
 */
export function readObjects(store) {
  const objects = store.ids().map((id) => [id, hex(store.get(id, { verify: true }))]);
  return {
    kind: 'objects',
    format_version: store.formatVersion,
    hash: store.hash,
    single_file: store.singleFile,
    count: objects.length,
    objects,
  };
}

/**
 * Runs every object store case (`object_cases`). `openCase(c)` returns an
 * open ObjectStore for case `c`: a directory store from the files the
 * manifest lists under `files`, or a single file when `single_file`.
 */
export function runObjectCorpus(manifest, openCase, expected) {
  return walk(manifest.object_cases, openCase, readObjects, expected, (d) => `${d.count} ${d.count === 1 ? 'object' : 'objects'}`);
}

/**
 * The expected-JSON document of an open bitable: every pair in key order
 * with its value whole, each key looked up again (a value that differs
 * from the scan's throws), and the answers to the `probes` of `expect`
 * (null for a case without one).
 */
export function readBitable(table, expect) {
  const entries = [];
  for (const [k, v] of table.range()) entries.push([hex(k), hex(v)]);
  for (const [k, v] of entries) {
    const again = table.get(unhex(k));
    if (again === undefined || hex(again) !== v) throw new Error(`get of ${k} differs from the scan`);
  }
  const probes = (expect?.probes ?? []).map((p) => {
    const key = unhex(p.key);
    const c = table.lowerBound(key);
    try {
      const lb = c.key;
      return { key: p.key, rank: table.rank(key), lower_bound: lb === undefined ? null : hex(lb), found: table.has(key) };
    } finally {
      c.free();
    }
  });
  const s = table.stats();
  return {
    kind: 'bitable',
    format_version: table.formatVersion,
    page_size: s.pageSize,
    align: s.align,
    count: table.count,
    entries,
    probes,
  };
}

/**
 * Runs every bitable case (`bitable_cases`). `openCase(c)` returns an open
 * Bitable for case `c`; `expected(c)` and `keep` as for walk().
 */
export function runBitableCorpus(manifest, openCase, expected, keep = false) {
  const read = async (t, c) => readBitable(t, c.expect ? await expected(c) : null);
  const counted = (d) => `${d.count} ${d.count === 1 ? 'pair' : 'pairs'}, ${d.probes.length} probes`;
  return walk(manifest.bitable_cases, openCase, read, expected, counted, keep);
}

/**
 * The expected-JSON document of an open remote (RemoteObjects): its hash,
 * the manifest's generation and live pack count, and every object in id
 * order (listed in pages), each read whole and verified against its id.
 */
export async function readRemote(remote) {
  const objects = [];
  let after;
  for (;;) {
    const page = remote.list({ after, limit: 7 });
    if (page.length === 0) break;
    for (const o of page) objects.push([o.id, hex(await remote.get(o.id))]);
    after = page[page.length - 1].id;
  }
  if (remote.objectCount !== objects.length) throw new Error(`objectCount ${remote.objectCount}, ${objects.length} listed`);
  return {
    kind: 'remote',
    hash: remote.hash,
    generation: remote.generation,
    packs: remote.packCount,
    count: objects.length,
    objects,
  };
}

/**
 * Runs every remote case (`remote_cases`). `openCase(c)` returns an open
 * RemoteObjects for case `c` (its folder served over HTTP); `expected(c)`
 * as for walk().
 */
export function runRemoteCorpus(manifest, openCase, expected) {
  return walk(manifest.remote_cases, openCase, readRemote, expected, (d) => `${d.count} ${d.count === 1 ? 'object' : 'objects'}`);
}

// Range queries (tests/corpus/README.md): key options are hex in the file,
// every other value goes through as it is.
const KEY_OPTIONS = new Set(['gt', 'gte', 'lt', 'lte', 'prefix']);

export function unhex(s) {
  const out = new Uint8Array(s.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(s.slice(2 * i, 2 * i + 2), 16);
  return out;
}

function queryOptions(request) {
  return Object.fromEntries(Object.entries(request).map(([k, v]) => [k, KEY_OPTIONS.has(k) ? unhex(v) : v]));
}

/** Runs one query on an open store through keys() and range(): { ok, detail }. */
function runQuery(store, q, values) {
  const o = queryOptions(q.request);
  if (q.error) {
    for (const call of [() => store.keys(o).toArray(), () => [...store.range(o)]]) {
      try {
        call();
        return { ok: false, detail: `ran without error, expected ${q.error}` };
      } catch (e) {
        if (!(e instanceof Error) || e.name !== 'BaleError' || e.code !== q.error) {
          return { ok: false, detail: `threw ${e.code ?? ''} ${e.message ?? e}, expected ${q.error}` };
        }
      }
    }
    return { ok: true, detail: q.error };
  }
  const keys = store.keys(o).toArray().map(hex);
  if (canonical(keys) !== canonical(q.keys)) return { ok: false, detail: `keys differ: got ${keys.length}, want ${q.keys.length}` };
  const entries = [...store.range(o)].map(([k, v]) => [hex(k), hex(v)]);
  const ok = canonical(entries) === canonical(q.keys.map((k) => [k, values.get(k)]));
  return { ok, detail: ok ? `${keys.length} keys` : 'entries differ from the keys and the expected values' };
}

/**
 * Runs the range queries of every case that has them. `openCase` and
 * `expected` as for runCorpus; `queriesOf(c)` returns the parsed queries
 * file of case `c`. Resolves to one result per query: { id, ok, detail }.
 */
export async function runQueries(manifest, openCase, queriesOf, expected) {
  const results = [];
  for (const c of manifest.cases.filter((x) => x.queries)) {
    const doc = await queriesOf(c);
    const values = new Map((await expected(c)).entries);
    const store = await openCase(c);
    try {
      for (const q of doc.queries) {
        const r = doc.case === c.id ? runQuery(store, q, values) : { ok: false, detail: `${c.queries} names ${doc.case}` };
        results.push({ id: `${c.id}/${q.id}`, kind: 'query', ...r });
      }
    } finally {
      store.close();
    }
  }
  return results;
}
