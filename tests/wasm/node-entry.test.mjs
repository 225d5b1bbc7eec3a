// The package as a Node user installs it: `import ... from 'bale-wasm'`
// resolves to the Node entry, which initialises the module itself.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const WASM = resolve(dirname(fileURLToPath(import.meta.url)), '../../bindings/wasm');

/** Runs `source` as an ES module of a project that has bale-wasm installed. */
function runInProject(source) {
  const dir = mkdtempSync(join(tmpdir(), 'bale-wasm-user-'));
  try {
    mkdirSync(join(dir, 'node_modules'));
    symlinkSync(WASM, join(dir, 'node_modules', 'bale-wasm'), 'dir');
    writeFileSync(join(dir, 'main.mjs'), source);
    const r = spawnSync(process.execPath, ['main.mjs'], { cwd: dir, encoding: 'utf8' });
    assert.equal(r.status, 0, `node exited with ${r.status}: ${r.stderr}`);
    return JSON.parse(r.stdout);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('importing bale-wasm under Node needs no init call', () => {
  const out = runInProject(`
    import { Store, formatVersion, errorCodes } from 'bale-wasm';
    let code = null;
    try { Store.fromBytes(new Uint8Array(0)); } catch (e) { code = e.code; }
    console.log(JSON.stringify({
      entry: import.meta.resolve('bale-wasm'),
      formatVersion: formatVersion(),
      codes: errorCodes().length,
      code,
    }));
  `);
  assert.match(out.entry, /\/js\/node\.js$/);
  assert.equal(out.formatVersion, 1);
  assert.equal(out.codes, 11);
  assert.equal(out.code, 'NOT_A_BALE_FILE');
});

test('browser-style code that awaits init() runs unchanged under Node', () => {
  const out = runInProject(`
    import init, { initSync, version } from 'bale-wasm';
    await init();
    initSync();
    console.log(JSON.stringify({ version: version() }));
  `);
  assert.match(out.version, /^\d+\.\d+\.\d+/);
});
