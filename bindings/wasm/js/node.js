// The package's entry under Node: it initialises the module from the .wasm
// file next to it, so `import { Store } from 'bale-wasm'` is ready to use
// with no init() or initSync() call. Browsers and bundlers get
// ../pkg/bale_wasm.js instead, whose default export init() they await.
import { readFileSync } from 'node:fs';

import { initSync } from '../pkg/bale_wasm.js';

initSync({ module: readFileSync(new URL('../pkg/bale_wasm_bg.wasm', import.meta.url)) });

export * from '../pkg/bale_wasm.js';
// Code written for the browser awaits init(): here it resolves at once.
export { default } from '../pkg/bale_wasm.js';
