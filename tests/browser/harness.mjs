// What the headless-Chromium suites share: a 127.0.0.1 server for the
// package, the corpus and the tests (HEAD and single byte ranges, as static
// hosts and buckets answer them), Debian's chromium driven by
// playwright-core, and pages whose errors fail the test. Importing this
// module registers the before/after hooks of the importing test file.
import { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, readSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, extname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

export const HERE = dirname(fileURLToPath(import.meta.url));
export const REPO = resolve(HERE, '../..');
export const WASM = join(REPO, 'bindings/wasm');
export const CORPUS = process.env.CORPUS_DIR ? resolve(process.env.CORPUS_DIR) : join(REPO, 'tests/corpus');
export const TARGET = process.env.CARGO_TARGET_DIR ? resolve(REPO, process.env.CARGO_TARGET_DIR) : join(REPO, 'target');
export const ARTIFACTS = process.env.BROWSER_ARTIFACTS ? resolve(process.env.BROWSER_ARTIFACTS) : join(TARGET, 'browser-artifacts');
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

// Missing pieces fail the run, never skip it.
export const manifest = JSON.parse(readFileSync(join(CORPUS, 'manifest.json'), 'utf8'));
assert.ok(existsSync(join(WASM, 'pkg/bale_wasm.js')), 'bindings/wasm/pkg is missing: run make test-wasm');
assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install chromium`);
const { chromium } = createRequire(join(WASM, 'package.json'))('playwright-core');

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.json': 'application/json',
  '.wasm': 'application/wasm',
  '.css': 'text/css',
};
// URL prefix -> directory. The inspector lives at /www/ and imports ../pkg/.
const ROOTS = [
  ['/corpus/', CORPUS],
  ['/tests/', join(REPO, 'tests')],
  ['/', WASM],
];

// The folder served under /big/ while a test needs it.
let bigDir;
/** Serves `dir` under /big/ (undefined: nothing there). */
export function serveBig(dir) {
  bigDir = dir;
}
// Body bytes of each range response, by path.
export const rangeBytes = new Map();
// Requests of each method and path (`HEAD /corpus/x`), answered or not.
export const requests = new Map();

// HEAD, and single `bytes=a-b` ranges (206), as static hosts and buckets
// answer them; under /norange/ the same files, with ranges ignored (200).
function serve(req, res) {
  let path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
  const honoursRange = !path.startsWith('/norange/');
  if (!honoursRange) path = path.slice('/norange'.length);
  requests.set(`${req.method} ${path}`, (requests.get(`${req.method} ${path}`) ?? 0) + 1);
  const [prefix, dir] = path.startsWith('/big/') && bigDir ? ['/big/', bigDir] : ROOTS.find(([p]) => path.startsWith(p));
  const file = resolve(dir, `.${path.slice(prefix.length - 1)}`);
  if ((file !== dir && !file.startsWith(dir + sep)) || !existsSync(file) || !statSync(file).isFile()) {
    res.writeHead(404).end('not found');
    return;
  }
  const size = statSync(file).size;
  const head = { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream', 'cache-control': 'no-store', 'accept-ranges': 'bytes' };
  if (req.method === 'HEAD') {
    res.writeHead(200, { ...head, 'content-length': size }).end();
    return;
  }
  const m = honoursRange && /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
  if (m) {
    const [start, end] = [Number(m[1]), Math.min(Number(m[2]), size - 1)];
    const body = Buffer.alloc(Math.max(0, end - start + 1));
    const fd = openSync(file, 'r');
    try {
      readSync(fd, body, 0, body.length, start);
    } finally {
      closeSync(fd);
    }
    rangeBytes.set(path, (rangeBytes.get(path) ?? 0) + body.length);
    res.writeHead(206, { ...head, 'content-range': `bytes ${start}-${end}/${size}`, 'content-length': body.length });
    res.end(body);
    return;
  }
  res.writeHead(200, head);
  res.end(readFileSync(file));
}

let server;
/** http://127.0.0.1:<port> of the test server, once `before` ran. */
export let base;
let browser;
let profile;

before(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  server = createServer(serve);
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  base = `http://127.0.0.1:${server.address().port}`;
  profile = mkdtempSync(join(tmpdir(), 'bale-chromium-'));
  browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: FLAGS,
    viewport: { width: 1280, height: 900 },
  });
});

after(async () => {
  await browser?.close();
  await new Promise((ok) => (server ? server.close(ok) : ok()));
  if (profile) rmSync(profile, { recursive: true, force: true });
});

/** A page whose uncaught errors and console errors fail the test. */
export async function newPage() {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => m.type() === 'error' && errors.push(`console: ${m.text()}`));
  return { page, errors };
}

/**
 * Opens a test page that records its run in `window[name]`, waits for it,
 * keeps a screenshot as `<name>.png`, and returns the page and the record.
 */
export async function runPage(path, name, timeout) {
  const { page, errors } = await newPage();
  await page.goto(`${base}${path}`);
  await page.waitForFunction((n) => window[n] !== undefined, name, { timeout });
  const run = await page.evaluate((n) => window[n], name);
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
  return { page, errors, run };
}
