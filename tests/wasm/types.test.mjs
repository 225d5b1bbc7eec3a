// The package's TypeScript types, as a user's project sees them: tsc
// --strict compiles tests/wasm/typed.ts (ES module) and typed-cjs.cts
// (CommonJS) against bale-wasm installed from its tarball into a fresh
// project (types found through the package's "exports": the web build's
// for import, the nodejs build's for require).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { WASM, installedProject } from './installed.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
// The package's dev dependency, wherever npm put it (the workspace root
// hoists it).
const TSC = createRequire(join(WASM, 'package.json')).resolve('typescript/bin/tsc');

test('the types accept the documented usage and refuse wrong calls', () => {
  const { dir, remove } = installedProject();
  try {
    for (const f of ['typed.ts', 'typed-cjs.cts']) copyFileSync(join(HERE, f), join(dir, f));
    const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ ...manifest, type: 'module' }));
    const compilerOptions = {
      strict: true,
      noEmit: true,
      target: 'es2022',
      module: 'nodenext',
      moduleResolution: 'nodenext',
      // wasm-bindgen's classes declare [Symbol.dispose]().
      lib: ['es2022', 'esnext.disposable', 'dom'],
      types: [],
      skipLibCheck: false,
    };
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['typed.ts', 'typed-cjs.cts'] }));
    const r = spawnSync(process.execPath, [TSC, '-p', dir], { encoding: 'utf8' });
    assert.equal(r.status, 0, `tsc failed:\n${r.stdout}${r.stderr}`);
  } finally {
    remove();
  }
});
