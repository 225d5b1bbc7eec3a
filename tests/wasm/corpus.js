// The golden-corpus procedure (tests/corpus/manifest.json, `_comment`) for
// the wasm package, shared by the Node test and the browser worker: open a
// case read-only, read every entry in key order with its value whole, and
// compare with the expected canonical JSON, or check that the first error
// raised by those steps has the expected code.

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
 * Runs every case. `openCase(c)` returns an open store for case `c` (it may
 * throw: that is the first error of the procedure); `expected(c)` returns
 * the parsed expected document of a valid case. Resolves to one result per
 * case: { id, ok, detail, bytesRead, fileBytes }.
 */
export async function runCorpus(manifest, openCase, expected) {
  const results = [];
  for (const c of manifest.cases) {
    const r = { id: c.id, kind: c.expect ? 'valid' : 'invalid', ok: false, detail: '' };
    let store = null;
    let doc = null;
    let err = null;
    try {
      store = await openCase(c);
      doc = readStore(store);
    } catch (e) {
      err = e;
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
        r.detail = r.ok ? `${doc.count} ${doc.count === 1 ? 'entry' : 'entries'}` : `content differs from ${c.expect}`;
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
