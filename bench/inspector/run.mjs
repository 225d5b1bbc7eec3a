// The browser inspector (bindings/wasm/www) in Debian's headless chromium,
// against its limits: opening a ~4 GiB tree store of 1,000,000 keys (picked
// as a file, and by `?url=` over a 127.0.0.1 range server) in under 1 s,
// reading under 1 MiB; a page of 50 keys (Next, or a seek to a random key)
// in under 50 ms; under 256 MiB of memory for any file size (against the
// corpus's 2,000-key store); and a ~4 GiB object store picked as a folder
// and opened by `?url=` (its folder's URL).
// Beside it, the peer a user would otherwise pick to look into a database
// file in a browser: sql.js (SQLite compiled to wasm, bench/inspector/sqljs,
// in a Web Worker too), which reads the whole file into memory. It opens a
// SQLite database of the same small pairs (sqljs-file, sqljs-url: the file
// picked, and fetched by URL, to its first page of 50 keys shown), pages
// and seeks by key the same way, and tries a database of just over
// SQLJS_GIB GiB holding all the tree store's keys (sqljs-large-file,
// sqljs-large-url), its failure recorded if it fails (at 2 GiB: Chromium
// reads no File from 2 GiB - 2 MiB on, nor a response about that large,
// into an ArrayBuffer, so sql.js gets no bytes to open). The tables end
// with bale / sql.js ratios for the same keys. sql.js writes its database
// in Node; python3's sqlite3 adds the large values.
// Prints the tables, and appends one JSON line per case to
// bench/results/inspector-<date>.jsonl. `make bench-inspector` runs it.
//
// Cases: tree-small-file, tree-file, tree-url, objects-small-folder,
// objects-folder, objects-url, sqljs-file, sqljs-url, sqljs-large-file,
// sqljs-large-url.
// Settings (environment): INSPECTOR_GIB (4), SQLJS_GIB (2), OPENS (5 per
// case), PAGES (200 Next presses), SEEKS (200), CASES (comma-separated
// names, default all), INSPECTOR_WORK (bench/work/inspector), BALE_CLI (the
// release CLI under $CARGO_TARGET_DIR), CHROMIUM (/usr/bin/chromium),
// RESULTS (the JSON lines file), FAIL_AFTER_MS (300000: how long an open
// that may fail is waited for).
import { execFileSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { hostname } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { runCase } from './cases.mjs';
import { LIMITS, report } from './report.mjs';
import { SMALL_PAIRS, TREE_KEYS, largeKey, objectStore, smallKey, sqliteLargeStore, sqliteStore, treeStore } from './data.mjs';
import { startServer } from './server.mjs';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const WASM = join(REPO, 'bindings/wasm');
const CORPUS = join(REPO, 'tests/corpus');
const TARGET = process.env.CARGO_TARGET_DIR ? resolve(REPO, process.env.CARGO_TARGET_DIR) : join(REPO, 'target');
const CLI = process.env.BALE_CLI ?? join(TARGET, 'release/bale');
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const WORK = resolve(REPO, process.env.INSPECTOR_WORK ?? 'bench/work/inspector');
const GIB = Number(process.env.INSPECTOR_GIB ?? 4);
const SQLJS_GIB = Number(process.env.SQLJS_GIB ?? 2);
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
const requireDev = createRequire(join(WASM, 'package.json'));
const { chromium } = requireDev('playwright-core');
// sql.js: in Node to write its database, its dist folder served to the peer's page.
const initSqlJs = requireDev('sql.js');
const SQLJS_DIST = dirname(requireDev.resolve('sql.js'));
const SQLJS_VERSION = JSON.parse(readFileSync(join(SQLJS_DIST, '../package.json'), 'utf8')).version;

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
const large = want('sqljs-large-file') || want('sqljs-large-url');
const sqlite = want('sqljs-file') || want('sqljs-url') || large ? await sqliteStore(WORK, await initSqlJs()) : null;
const sqliteLarge = large ? await sqliteLargeStore(WORK, sqlite, SQLJS_GIB) : null;
// The big store's keys in order: the small pairs, then the large values.
const treeKeys = { count: TREE_KEYS, at: (i) => (i < SMALL_PAIRS ? smallKey(i) : largeKey(i - SMALL_PAIRS)) };
const smallKeys = { count: SMALL_PAIRS, at: smallKey };

const server = await startServer([
  ['/data/', WORK],
  ['/sqljs/dist/', SQLJS_DIST],
  ['/sqljs/', join(REPO, 'bench/inspector/sqljs')],
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
  // The peer, sql.js, on the same small pairs.
  sqlite && { name: 'sqljs-file', store: 'sqlite', peer: 'sql.js', page: '/sqljs/index.html', source: 'file', path: sqlite.path, meta: sqlite, keys: smallKeys },
  sqlite && { name: 'sqljs-url', store: 'sqlite', peer: 'sql.js', page: '/sqljs/index.html', source: 'url', url: `${server.base}/data/${relative(WORK, sqlite.path)}`, file: sqlite.path, meta: sqlite, keys: smallKeys },
  sqliteLarge && { name: 'sqljs-large-file', store: 'sqlite', peer: 'sql.js', page: '/sqljs/index.html', source: 'file', path: sqliteLarge.path, meta: sqliteLarge, keys: treeKeys, mayFail: true },
  sqliteLarge && { name: 'sqljs-large-url', store: 'sqlite', peer: 'sql.js', page: '/sqljs/index.html', source: 'url', url: `${server.base}/data/${relative(WORK, sqliteLarge.path)}`, file: sqliteLarge.path, meta: sqliteLarge, keys: treeKeys, mayFail: true },
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
      ...(c.peer ? { peer: c.peer, peerVersion: SQLJS_VERSION } : {}),
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
