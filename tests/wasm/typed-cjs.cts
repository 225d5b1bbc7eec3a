// Compiled (not run) by types.test.mjs with tsc --strict: `require` of
// bale-wasm has the CommonJS build's types, which need no init.
import bale = require('bale-wasm');

export function saved(): Uint8Array {
  const db: bale.Store = bale.Store.create();
  db.put('asset/1/name', 'tree.png');
  db.commit();
  const version: number = bale.formatVersion();
  const codes: bale.ErrorCode[] = bale.errorCodes();
  // @ts-expect-error the CommonJS build is ready when required: no initSync
  bale.initSync({ module: new Uint8Array(0) });
  return version > 0 && codes.length > 0 ? db.toBytes() : new Uint8Array(0);
}
