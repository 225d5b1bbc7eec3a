// What the headless-Chromium suites share: a 127.0.0.1 server for the
// package, the corpus and the tests (HEAD and single byte ranges, as static
// hosts and buckets answer them), Debian's chromium driven by
// playwright-core, and pages whose errors fail the test. Importing this
// module registers the before/after hooks of the importing test file.
import { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { startRangeServer } from './range-server.mjs';

export const HERE = dirname(fileURLToPath(import.meta.url));
export const REPO = resolve(HERE, '../..');
export const WASM = join(REPO, 'bindings/wasm');
export const CORPUS = process.env.CORPUS_DIR ? resolve(process.env.CORPUS_DIR) : join(REPO, 'tests/corpus');
export const TARGET = process.env.CARGO_TARGET_DIR ? resolve(REPO, process.env.CARGO_TARGET_DIR) : join(REPO, 'target');
// The remotes `bale-corpus remote-fixture` writes (make test-wasm does).
export const REMOTE_FIXTURE = process.env.REMOTE_FIXTURE ? resolve(process.env.REMOTE_FIXTURE) : join(TARGET, 'remote-fixture');
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

// URL prefix -> directory. The inspector lives at /www/ and imports ../pkg/.
const ROOTS = [
  ['/corpus/', CORPUS],
  ['/remote-fixture/', REMOTE_FIXTURE],
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

// Counts what the server sent: range bodies and requests, by path.
function heard({ method, path, status, bytes }) {
  requests.set(`${method} ${path}`, (requests.get(`${method} ${path}`) ?? 0) + 1);
  if (status === 206) rangeBytes.set(path, (rangeBytes.get(path) ?? 0) + bytes);
}

let server;
/** http://127.0.0.1:<port> of the test server, once `before` ran. */
export let base;
let browser;
let profile;

before(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  server = await startRangeServer((path) => (path.startsWith('/big/') && bigDir ? ['/big/', bigDir] : ROOTS.find(([p]) => path.startsWith(p))), heard);
  base = server.base;
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
  await server?.close();
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
 * Keeps a screenshot of the page as `<name>.png` among the artifacts. Under
 * a loaded machine (make test runs two lanes of suites) Chromium once took
 * more than the default 30 s to paint one, so it gets longer.
 */
export function screenshot(page, name) {
  return page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true, timeout: 120000 });
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
  await screenshot(page, name);
  return { page, errors, run };
}
