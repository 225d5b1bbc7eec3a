// The package as a Node user installs it: packed and installed from its
// tarball into a fresh project (installed.mjs). Its exports map gives
// `import` under Node js/node.js, which initialises the web build itself;
// `require` the CommonJS build (wasm-bindgen --target nodejs); and
// `bale-wasm/bundler` the bundler build, run here the way bundlers load it
// (a .wasm imported as a module: Node's --experimental-wasm-modules). Each
// walks the golden corpus's tree and bitable cases and saves a store.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

import { CORPUS, manifest } from './helpers.mjs';
import { SLOW } from './exercise.mjs';
import { installedProject, runIn } from './installed.mjs';

const EXERCISE = pathToFileURL(join(import.meta.dirname, 'exercise.mjs')).href;
assert.ok(manifest.cases.some((c) => c.id === SLOW), `${SLOW} is no longer in the corpus`);

let project;
before(() => {
  project = installedProject();
});
after(() => project.remove());

/** What exercise.mjs reports for a build that works. */
function assertExercised(out) {
  assert.equal(out.formatVersion, 1);
  assert.equal(out.codes, 11);
  assert.deepEqual(out.trees, { ran: manifest.cases.length - 1, failed: [] });
  assert.deepEqual(out.tables, { ran: manifest.bitable_cases.length, failed: [] });
  assert.equal(out.saved, '{"name":"tree.png"}');
  assert.equal(out.code, 'NOT_A_BALE_FILE');
}

test('the tarball holds the three builds with their types, the workers and nothing else', () => {
  const files = project.tarball.files.map((f) => f.path).sort();
  const build = ['bale_wasm.d.ts', 'bale_wasm.js', 'bale_wasm_bg.wasm', 'bale_wasm_bg.wasm.d.ts'];
  assert.deepEqual(files, [
    'README.md', 'js/node.js', 'js/store-worker.js', 'js/worker.d.ts', 'js/worker.js', 'package.json',
    ...build.map((f) => `pkg/${f}`),
    ...[...build, 'bale_wasm_bg.js'].map((f) => `pkg/bundler/${f}`),
    ...[...build, 'package.json'].map((f) => `pkg/node/${f}`),
  ].sort());
  // Every file the exports map names is in it, and each condition gets its build.
  const pkg = JSON.parse(readFileSync(join(project.dir, 'node_modules/bale-wasm/package.json'), 'utf8'));
  const targets = [];
  const walk = (v) => (typeof v === 'string' ? targets.push(v) : Object.values(v).forEach(walk));
  walk(pkg.exports);
  for (const t of targets) assert.ok(files.includes(t.slice(2)), `${t} is not in the tarball`);
  const main = pkg.exports['.'];
  assert.deepEqual(main.node.import, { types: './pkg/bale_wasm.d.ts', default: './js/node.js' });
  assert.deepEqual(main.node.require, { types: './pkg/node/bale_wasm.d.ts', default: './pkg/node/bale_wasm.js' });
  assert.deepEqual(main.browser, { types: './pkg/bale_wasm.d.ts', default: './pkg/bale_wasm.js' });
  assert.deepEqual(pkg.exports['./bundler'], { types: './pkg/bundler/bale_wasm.d.ts', default: './pkg/bundler/bale_wasm.js' });
});

test('import under Node gives js/node.js, ready with no init call', () => {
  const out = runIn(project.dir, 'esm.mjs', `
    import * as bale from 'bale-wasm';
    import { exercise } from ${JSON.stringify(EXERCISE)};
    console.log(JSON.stringify({
      entry: import.meta.resolve('bale-wasm'),
      ...(await exercise(bale, ${JSON.stringify(CORPUS)})),
    }));
  `);
  assert.ok(out.entry.endsWith('/node_modules/bale-wasm/js/node.js'), out.entry);
  assertExercised(out);
});

test('browser-style code that awaits init() runs unchanged under Node', () => {
  const out = runIn(project.dir, 'init.mjs', `
    import init, { initSync, version } from 'bale-wasm';
    await init();
    initSync();
    console.log(JSON.stringify({ version: version() }));
  `);
  assert.match(out.version, /^\d+\.\d+\.\d+/);
});

test('require gives the CommonJS build, ready with no init call', () => {
  const out = runIn(project.dir, 'cjs.cjs', `
    const bale = require('bale-wasm');
    import(${JSON.stringify(EXERCISE)})
      .then(({ exercise }) => exercise(bale, ${JSON.stringify(CORPUS)}))
      .then((r) => console.log(JSON.stringify({ entry: require.resolve('bale-wasm'), init: typeof bale.initSync, ...r })));
  `);
  assert.ok(out.entry.endsWith('/node_modules/bale-wasm/pkg/node/bale_wasm.js'), out.entry);
  assert.equal(out.init, 'undefined');
  assertExercised(out);
});

test('bale-wasm/bundler runs where .wasm imports as a module', () => {
  const out = runIn(project.dir, 'bundler.mjs', `
    import * as bale from 'bale-wasm/bundler';
    import { exercise } from ${JSON.stringify(EXERCISE)};
    console.log(JSON.stringify({
      entry: import.meta.resolve('bale-wasm/bundler'),
      ...(await exercise(bale, ${JSON.stringify(CORPUS)})),
    }));
  `, ['--experimental-wasm-modules', '--no-warnings']);
  assert.ok(out.entry.endsWith('/node_modules/bale-wasm/pkg/bundler/bale_wasm.js'), out.entry);
  assertExercised(out);
});
