// The package's TypeScript types, as a user's project sees them: tsc
// --strict compiles tests/wasm/typed.ts against bale-wasm installed in a
// temporary project (types found through the package's "exports").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
const WASM = resolve(HERE, '../../bindings/wasm');
// The package's dev dependency, wherever npm put it (the workspace root
// hoists it).
const TSC = createRequire(join(WASM, 'package.json')).resolve('typescript/bin/tsc');

test('the types accept the documented usage and refuse wrong calls', () => {
  const dir = mkdtempSync(join(tmpdir(), 'bale-wasm-types-'));
  try {
    mkdirSync(join(dir, 'node_modules'));
    symlinkSync(WASM, join(dir, 'node_modules', 'bale-wasm'), 'dir');
    copyFileSync(join(HERE, 'typed.ts'), join(dir, 'typed.ts'));
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
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
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['typed.ts'] }));
    const r = spawnSync(process.execPath, [TSC, '-p', dir], { encoding: 'utf8' });
    assert.equal(r.status, 0, `tsc failed:\n${r.stdout}${r.stderr}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
