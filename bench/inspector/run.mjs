// The browser inspector (bindings/wasm/www) in Debian's headless chromium,
// against its limits: opening a ~4 GiB tree store of 1,000,000 keys (picked
// as a file, and by `?url=` over a 127.0.0.1 range server) in under 1 s,
// reading under 1 MiB; a page of 50 keys (Next, or a seek to a random key)
// in under 50 ms; under 256 MiB of memory for any file size (against the
// corpus's 2,000-key store); and a ~4 GiB object store picked as a folder
// and opened by `?url=` (its folder's URL).
// Prints a table, and appends one JSON line per case to
// bench/results/inspector-<date>.jsonl. `make bench-inspector` runs it.
//
// Settings (environment): INSPECTOR_GIB (4), OPENS (5 per case), PAGES
// (200 Next presses), SEEKS (200), CASES (comma-separated names, default
// all), INSPECTOR_WORK (bench/work/inspector), BALE_CLI (the release CLI
// under $CARGO_TARGET_DIR), CHROMIUM (/usr/bin/chromium), RESULTS (the
// JSON lines file).
import { execFileSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { hostname } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { runCase } from './cases.mjs';
import { LIMITS, report } from './report.mjs';
import { SMALL_PAIRS, TREE_KEYS, largeKey, objectStore, smallKey, treeStore } from './data.mjs';
import { startServer } from './server.mjs';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const WASM = join(REPO, 'bindings/wasm');
const CORPUS = join(REPO, 'tests/corpus');
const TARGET = process.env.CARGO_TARGET_DIR ? resolve(REPO, process.env.CARGO_TARGET_DIR) : join(REPO, 'target');
const CLI = process.env.BALE_CLI ?? join(TARGET, 'release/bale');
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const WORK = resolve(REPO, process.env.INSPECTOR_WORK ?? 'bench/work/inspector');
const GIB = Number(process.env.INSPECTOR_GIB ?? 4);
const OPENS = Number(process.env.OPENS ?? 5);
const PAGES = Number(process.env.PAGES ?? 200);
const SEEKS = Number(process.env.SEEKS ?? 200);
const CASES = process.env.CASES?.split(',').filter(Boolean);
// The flags the browser test suites use.
const FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

for (const [what, path, fix] of [
  ['the wasm package', join(WASM, 'pkg/bale_wasm.js'), 'make wasm-pkg'],
  ['the release CLI', CLI, 'cargo build --release -p bale-cli'],
  ['chromium', CHROMIUM, 'apt-get install chromium'],
  ['the corpus', join(CORPUS, 'manifest.json'), 'git checkout tests/corpus'],
]) {
  if (!existsSync(path)) {
    console.error(`${what} is missing (${path}): ${fix}`);
    process.exit(1);
  }
}
const { chromium } = createRequire(join(WASM, 'package.json'))('playwright-core');

const git = (...args) => execFileSync('git', args, { cwd: REPO, encoding: 'utf8' }).trim();
const commit = git('rev-parse', '--short', 'HEAD');
const dirty = git('status', '--porcelain', '--untracked-files=no') !== '';
const now = new Date();
const date = now.toISOString().slice(0, 10);
const RESULTS = resolve(REPO, process.env.RESULTS ?? `bench/results/inspector-${date}.jsonl`);
const log = (s) => console.log(s);

// The stores: the corpus's 2,000-key store and object store, and the big ones.
const manifest = JSON.parse(readFileSync(join(CORPUS, 'manifest.json'), 'utf8'));
const thousands = manifest.cases.find((c) => c.id === 'thousands');
const thousandsKeys = JSON.parse(readFileSync(join(CORPUS, thousands.expect), 'utf8')).entries.map(([k]) => Buffer.from(k, 'hex').toString());
const smallObjects = manifest.cases.find((c) => c.id === 'objects-blake3') ?? manifest.object_cases?.find((c) => c.id === 'objects-blake3');

const want = (name) => !CASES || CASES.includes(name);
const tree = want('tree-file') || want('tree-url') ? await treeStore(WORK, CLI, GIB) : null;
const objects = want('objects-folder') || want('objects-url') ? await objectStore(WORK, CLI, GIB) : null;
// The big store's keys in order: the small pairs, then the large values.
const treeKeys = { count: TREE_KEYS, at: (i) => (i < SMALL_PAIRS ? smallKey(i) : largeKey(i - SMALL_PAIRS)) };

const server = await startServer([
  ['/data/', WORK],
  ['/', WASM],
]);
const ctx = { chromium, chromiumPath: CHROMIUM, flags: FLAGS, server, log };
const cases = [
  { name: 'tree-small-file', store: 'tree', source: 'file', path: join(CORPUS, thousands.file), keys: { count: thousandsKeys.length, at: (i) => thousandsKeys[i] } },
  tree && { name: 'tree-file', store: 'tree', source: 'file', path: tree.path, meta: tree, keys: treeKeys },
  tree && { name: 'tree-url', store: 'tree', source: 'url', url: `${server.base}/data/${relative(WORK, tree.path)}`, file: tree.path, meta: tree, keys: treeKeys },
  smallObjects && { name: 'objects-small-folder', store: 'objects', source: 'folder', path: join(CORPUS, smallObjects.file), keys: null },
  objects && { name: 'objects-folder', store: 'objects', source: 'folder', path: objects.path, meta: objects, keys: null },
  objects && { name: 'objects-url', store: 'objects', source: 'url', url: `${server.base}/data/${relative(WORK, objects.path)}/`, file: objects.path, meta: objects, keys: null },
].filter((c) => c && want(c.name));

const results = [];
try {
  for (const c of cases) {
    log(`${c.name}: ${c.path ?? c.url}`);
    const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).map(Number);
    const r = await runCase(ctx, { opens: OPENS, pages: PAGES, seeks: SEEKS, ...c });
    const { meta, keys } = c;
    results.push({
      bench: 'inspector',
      ...r,
      store: c.store,
      file: relative(REPO, c.path ?? c.file),
      fileBytes: meta?.fileBytes ?? r.summary?.fileBytes ?? null,
      keys: keys?.count ?? null,
      objects: meta?.objects ?? null,
      load: { before: load, after: readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).map(Number) },
      commit,
      dirty,
      date: now.toISOString(),
      host: hostname(),
      limits: LIMITS,
    });
  }
} finally {
  await server.close();
}

mkdirSync(dirname(RESULTS), { recursive: true });
for (const r of results) appendFileSync(RESULTS, `${JSON.stringify(r)}\n`);
report(results);
console.log(`\nJSON lines appended to ${relative(REPO, RESULTS)}`);
