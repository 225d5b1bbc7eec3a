// What a project that installed bale-wasm runs through each of its builds
// (node-entry.test.mjs): the golden corpus's tree and bitable cases from
// bytes, a writable store in memory saved and opened again, and an error
// with its code. `bale` is the module the build under test gave. One case is
// left out: value-index-depth-2 takes seconds in each build (its large value
// is read in many small pieces) and node.test.mjs walks it already.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { runBitableCorpus, runCorpus } from './corpus.js';

export const SLOW = 'value-index-depth-2';

const failures = (results) => results.filter((r) => !r.ok).map((r) => `${r.id}: ${r.detail}`);

export async function exercise(bale, corpus) {
  const { Bitable, Store, errorCodes, formatVersion } = bale;
  const manifest = JSON.parse(readFileSync(join(corpus, 'manifest.json'), 'utf8'));
  manifest.cases = manifest.cases.filter((c) => c.id !== SLOW);
  const expected = (c) => JSON.parse(readFileSync(join(corpus, c.expect), 'utf8'));
  const bytes = (c) => readFileSync(join(corpus, c.file));
  const trees = await runCorpus(manifest, (c) => Store.fromBytes(bytes(c)), expected);
  const tables = await runBitableCorpus(manifest, (c) => Bitable.fromBytes(bytes(c)), expected);

  const db = Store.create();
  db.put('asset/42', '{"name":"tree.png"}');
  db.commit();
  const again = Store.fromBytes(db.toBytes());
  let code = null;
  try {
    Store.fromBytes(new Uint8Array(0));
  } catch (e) {
    code = e.code;
  }
  return {
    formatVersion: formatVersion(),
    codes: errorCodes().length,
    trees: { ran: trees.length, failed: failures(trees) },
    tables: { ran: tables.length, failed: failures(tables) },
    saved: new TextDecoder().decode(again.get('asset/42')),
    code,
  };
}
