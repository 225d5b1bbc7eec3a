// bale-wasm as users install it: `npm pack` of bindings/wasm, installed with
// --offline from the tarball into a fresh project, where test code runs as
// that project's own modules (so 'bale-wasm' resolves through the installed
// package's exports map, never the checkout).
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const WASM = resolve(dirname(fileURLToPath(import.meta.url)), '../../bindings/wasm');

// npm's own settings from a calling `npm run` (npm_config_*) stay out.
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)));

/**
 * Packs the package and installs it into a new project under a new
 * temporary directory. Returns the project's directory, npm's report of the
 * tarball (`files`: path and size of each) and `remove()`.
 */
export function installedProject() {
  const root = mkdtempSync(join(tmpdir(), 'bale-wasm-npm-'));
  try {
    const [tarball] = JSON.parse(execFileSync('npm', ['pack', '--json', '--pack-destination', root], {
      cwd: WASM, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'],
    }));
    const dir = join(root, 'project');
    mkdirSync(dir);
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'bale-wasm-user', private: true }));
    const r = spawnSync('npm', ['install', '--offline', '--no-audit', '--no-fund', '--cache', join(root, 'npm-cache'), join(root, tarball.filename)], {
      cwd: dir, env, encoding: 'utf8',
    });
    assert.equal(r.status, 0, `npm install failed:\n${r.stdout}${r.stderr}`);
    return { dir, tarball, remove: () => rmSync(root, { recursive: true, force: true }) };
  } catch (e) {
    rmSync(root, { recursive: true, force: true });
    throw e;
  }
}

/**
 * Writes `source` to `name` in the project and runs it with node (`flags`
 * first); its stdout must be one JSON document, which is returned.
 */
export function runIn(dir, name, source, flags = []) {
  writeFileSync(join(dir, name), source);
  const r = spawnSync(process.execPath, [...flags, name], { cwd: dir, encoding: 'utf8' });
  assert.equal(r.status, 0, `node ${name} exited with ${r.status}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}
