// What one benchmark case does in the browser: open a store in the
// inspector (a picked file, a picked folder or `?url=`) several times, then
// page through its keys and seek to random ones, timing each step inside
// the page from the user's action to the DOM event the inspector fires
// when it has shown the answer, while the browser's memory is sampled.
// The peer's page (sql.js, bench/inspector/sqljs) has the same hooks, so
// its cases run the same steps; a case that may fail (a file too large for
// it) records how it failed instead of ending the run.
import { sampler } from './memory.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Runs before the inspector's scripts in every page: notes when the page
 * took a picked file (the input's change event) and when the inspector
 * said it was ready (body[data-state]), on the page's clock.
 */
function observe() {
  const b = (window.__bench = { changeAt: null, readyAt: null, state: null, waiters: [] });
  document.addEventListener('change', () => (b.changeAt ??= performance.now()), true);
  new MutationObserver(() => {
    const s = document.body?.dataset.state;
    if (s && b.readyAt === null) {
      b.readyAt = performance.now();
      b.state = s;
      for (const w of b.waiters.splice(0)) w();
    }
  }).observe(document, { subtree: true, attributes: true, attributeFilter: ['data-state'] });
}

/** Waits (in the page) until the inspector is ready or failed; what it saw. */
function settled(page) {
  return page.evaluate(
    () =>
      new Promise((ok) => {
        const b = window.__bench;
        const done = () =>
          ok({
            state: b.state,
            changeAt: b.changeAt,
            readyAt: b.readyAt,
            code: document.body.dataset.code ?? null,
            status: document.getElementById('status').textContent,
            error: document.getElementById('error').textContent,
            summary: window.inspector.summary,
            read: window.inspector.read,
          });
        if (b.readyAt !== null) done();
        else b.waiters.push(done);
      }),
  );
}

/**
 * Does `action` in the page and times it to the next `event` (bubbling to
 * the document): `shownMs` when the inspector fired it (the rows are in the
 * DOM), `frameMs` at the next animation frame after it (about when they are
 * painted). Returns the counter and what the key table then shows.
 */
function timed(page, action, arg, event = 'page-shown') {
  return page.evaluate(
    ([action, arg, event]) =>
      new Promise((ok) => {
        const t0 = performance.now();
        document.addEventListener(
          event,
          () => {
            const shownMs = performance.now() - t0;
            requestAnimationFrame(() =>
              setTimeout(() => {
                const cells = [...document.querySelectorAll('#keys td.key, #objects td.key')].map((td) => td.textContent);
                ok({ shownMs, frameMs: performance.now() - t0, read: window.inspector.read, rows: cells.length, first: cells[0] ?? null, last: cells.at(-1) ?? null, info: document.getElementById('keys-info')?.textContent ?? null });
              }),
            );
          },
          { once: true },
        );
        const $ = (id) => document.getElementById(id);
        if (action === 'click') $(arg).click();
        else if (action === 'seek') {
          $('seek').value = arg;
          $('seek').form.requestSubmit();
        }
      }),
    [action, arg, event],
  );
}

function percentile(sorted, p) {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/** Median, p95 and max of a list of times (ms, 2 decimals). */
export function spread(values) {
  const s = [...values].sort((a, b) => a - b);
  const r = (x) => (x === null ? null : Math.round(x * 100) / 100);
  return { n: s.length, min: r(s[0] ?? null), median: r(percentile(s, 50)), p95: r(percentile(s, 95)), max: r(s.at(-1) ?? null) };
}

/** A small seeded generator (mulberry32), so every run seeks the same keys. */
export function random(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * settled(page), or how the open ended otherwise: the page's renderer
 * crashed (state 'crashed'), or no answer came in `ms` ('timeout').
 */
async function settledOrFailed(page, ms) {
  let timer;
  let onCrash;
  const crashed = new Promise((ok) => page.once('crash', (onCrash = () => ok({ state: 'crashed' }))));
  const late = new Promise((ok) => (timer = setTimeout(() => ok({ state: 'timeout' }), ms)));
  try {
    return await Promise.race([settled(page).catch((e) => ({ state: 'lost', error: e.message })), crashed, late]);
  } finally {
    clearTimeout(timer);
    page.off('crash', onCrash);
  }
}

/** How long a case that may fail waits for its open. */
const FAIL_AFTER_MS = Number(process.env.FAIL_AFTER_MS ?? 300_000);

/** Opens slower than this keep their resource timings in the results. */
const SLOW_MS = Number(process.env.SLOW_MS ?? 1000);

/** The page's and its workers' resource timings (ms from each one's start). */
async function timeline(page) {
  const entries = () => {
    const r = (x) => Math.round(x * 10) / 10;
    const nav = performance.getEntriesByType('navigation')[0];
    return {
      origin: performance.timeOrigin,
      navigation: nav ? { responseEnd: r(nav.responseEnd), domContentLoaded: r(nav.domContentLoadedEventEnd), load: r(nav.loadEventEnd) } : null,
      resources: performance.getEntriesByType('resource').map((e) => ({ name: e.name.replace(/^https?:\/\/[^/]+/, ''), start: r(e.startTime), duration: r(e.duration) })),
    };
  };
  try {
    return { page: await page.evaluate(entries), workers: await Promise.all(page.workers().map((w) => w.evaluate(entries).catch((e) => ({ error: e.message })))) };
  } catch (e) {
    return { error: e.message };
  }
}

/** Runs a full garbage collection in the page and in each of its workers (over CDP). */
async function collectGarbage(browser, page) {
  try {
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('HeapProfiler.collectGarbage');
    const b = await browser.newBrowserCDPSession();
    const { targetInfos } = await b.send('Target.getTargets');
    let workers = 0;
    for (const t of targetInfos.filter((x) => x.type === 'worker')) {
      const { sessionId } = await b.send('Target.attachToTarget', { targetId: t.targetId, flatten: false });
      await b.send('Target.sendMessageToTarget', { sessionId, message: JSON.stringify({ id: 1, method: 'HeapProfiler.collectGarbage' }) });
      workers++;
    }
    return { page: true, workers };
  } catch (e) {
    return { error: e.message };
  }
}

/**
 * One case, in a fresh browser. `c`: { name, source ('file' | 'folder' |
 * 'url'), path (file or folder), url (for 'url'), keys ({ count, at(i) })
 * or null, store ('tree' | 'objects' | 'sqlite'), pages, seeks, opens,
 * page (the inspector's path on the server, /www/index.html by default),
 * mayFail (an open that fails is recorded in `failure`, not thrown) }.
 */
export async function runCase(ctx, c) {
  const { chromium, chromiumPath, flags, server, log } = ctx;
  const browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: flags });
  // Playwright starts the browser as a child of this process, and this
  // process starts nothing else while a case runs.
  const mem = sampler(process.pid);
  const errors = [];
  const out = { case: c.name, source: c.source, chromium: browser.version() };
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await context.addInitScript(observe);
    const page = await context.newPage();
    page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
    page.on('console', (m) => m.type() === 'error' && errors.push(`console: ${m.text()}`));
    const inspector = `${server.base}${c.page ?? '/www/index.html'}`;

    // Baselines: a blank page, then the inspector with nothing open.
    await page.goto('about:blank');
    mem.mark('blank');
    await sleep(1500);
    await page.goto(inspector);
    await page.waitForLoadState('networkidle');
    mem.mark('empty');
    await sleep(1500);

    // Opening, `opens` times, each in a freshly loaded page.
    mem.mark('open');
    const opens = [];
    let failed = false;
    for (let i = 0; i < c.opens; i++) {
      server.reset();
      let r;
      let t0 = performance.now();
      if (c.source === 'url') {
        await page.goto(`${inspector}?url=${encodeURIComponent(c.url)}`, { waitUntil: 'commit' });
        r = c.mayFail ? await settledOrFailed(page, FAIL_AFTER_MS) : await settled(page);
        r.wallMs = performance.now() - t0;
        // From the navigation's start, on the page's clock.
        r.pageMs = r.readyAt;
      } else {
        if (i > 0) await page.goto(inspector);
        await page.waitForLoadState('networkidle');
        t0 = performance.now();
        await page.setInputFiles(c.source === 'folder' ? '#folder' : '#file', c.path);
        r = c.mayFail ? await settledOrFailed(page, FAIL_AFTER_MS) : await settled(page);
        r.wallMs = performance.now() - t0;
        r.pageMs = r.readyAt - r.changeAt;
      }
      const sent = c.source === 'url' ? server.sent(new URL(c.url).pathname) : null;
      if (r.state !== 'ready' && c.mayFail) {
        // How far it got: what it read, where the time went, and the memory (sampled on).
        out.failure = { state: r.state, code: r.code ?? null, error: r.error ?? null, status: r.status ?? null, wallMs: r.wallMs, pageMs: Number.isFinite(r.pageMs) ? r.pageMs : null, read: r.read ?? null, sent, open: i + 1 };
        log(`  ${c.name} open ${i + 1}/${c.opens}: failed (${r.state}) after ${r.wallMs.toFixed(1)} ms: ${r.code ?? ''} ${r.error ?? ''}`);
        failed = true;
        break;
      }
      if (r.state !== 'ready') throw new Error(`${c.name}: the inspector did not open ${c.path ?? c.url}: ${r.code} ${r.error}`);
      opens.push({ wallMs: r.wallMs, pageMs: r.pageMs, bytes: r.read.bytes, reads: r.read.reads, sent });
      // The peer's worker says where its open's time went.
      if (r.summary?.workerMs) opens.at(-1).workerMs = r.summary.workerMs;
      // An open far slower than the rest: where the time went, from the
      // resource timings of the page and of its worker.
      if (r.wallMs > SLOW_MS) opens.at(-1).timeline = await timeline(page);
      if (i === 0) out.summary = r.summary;
      // sql.js's page shows its first page of keys when it has opened: that is its overview.
      if (c.store === 'sqlite') Object.assign(opens.at(-1), { overviewWallMs: r.wallMs, overviewPageMs: r.pageMs, overviewFilled: true, overviewBytes: r.read.bytes, overviewReads: r.read.reads });
      if (c.store === 'tree') {
        // The tree's overview is complete when its estimated shape shows.
        const shown = await page.evaluate(() =>
          new Promise((ok) => {
            const done = () => ok({ at: performance.now(), read: window.inspector.read });
            const poll = () => (document.querySelector('#estimate[data-ready]') ? done() : setTimeout(poll, 2));
            poll();
          }),
        );
        Object.assign(opens.at(-1), {
          overviewWallMs: performance.now() - t0,
          overviewPageMs: c.source === 'url' ? shown.at : shown.at - r.changeAt,
          overviewFilled: true,
          overviewBytes: shown.read.bytes,
          overviewReads: shown.read.reads,
        });
      }
      if (c.store === 'objects') {
        // The object store's first view: its overview, then a page of objects.
        const shown = await page.evaluate(() =>
          new Promise((ok) => {
            const t = performance.now();
            const done = () => {
              const rows = [...document.querySelectorAll('#objects-overview tr')].map((tr) => [tr.cells[0]?.textContent ?? tr.querySelector('th')?.textContent, tr.querySelector('td')?.textContent]);
              ok({ waitedMs: performance.now() - t, at: performance.now(), rows, info: document.getElementById('objects-info')?.textContent ?? null, read: window.inspector.read });
            };
            if (document.getElementById('objects-info')?.textContent) done();
            else document.addEventListener('page-shown', done, { once: true });
          }),
        );
        const overviewWallMs = performance.now() - t0;
        const filled = shown.rows.length > 0 && !shown.rows.some(([k]) => k === 'error') && shown.rows.some(([, v]) => /\d/.test(v ?? ''));
        Object.assign(opens.at(-1), {
          overviewWallMs,
          overviewPageMs: c.source === 'url' ? shown.at : shown.at - r.changeAt,
          overviewFilled: filled,
          overviewText: filled ? null : shown.rows.map((x) => x.join(': ')).join('; '),
          listInfo: shown.info,
          overviewBytes: shown.read.bytes,
          overviewReads: shown.read.reads,
        });
      }
      log(`  ${c.name} open ${i + 1}/${c.opens}: ${r.wallMs.toFixed(1)} ms (in page ${r.pageMs.toFixed(1)} ms), read ${r.read.bytes} bytes in ${r.read.reads} reads${sent ? `, server sent ${sent.bytes} bytes in ${sent.requests} requests + ${sent.heads} HEAD` : ''}`);
    }
    out.opens = opens;

    // Paging, on the page of the last open.
    mem.mark('browse');
    if (c.keys && !failed) {
      const before = await page.evaluate(() => window.inspector.read);
      server.reset();
      const first = await timed(page, 'click', 'tab-keys');
      out.firstPage = { ms: first.shownMs, frameMs: first.frameMs, first: first.first, rows: first.rows };
      const next = [];
      let last = first;
      let wrongNext = 0;
      for (let i = 0; i < c.pages; i++) {
        if (await page.isDisabled('#keys-next')) break;
        const r = await timed(page, 'click', 'keys-next');
        if (r.first !== c.keys.at((i + 1) * 50)) wrongNext++;
        next.push({ ms: r.shownMs, frameMs: r.frameMs, bytes: r.read.bytes - last.read.bytes, reads: r.read.reads - last.read.reads });
        last = r;
      }
      const rnd = random(0x1a5e);
      const seeks = [];
      let wrongSeek = 0;
      for (let i = 0; i < c.seeks; i++) {
        const k = c.keys.at(Math.floor(rnd() * c.keys.count));
        const r = await timed(page, 'seek', k);
        if (r.first !== k) wrongSeek++;
        seeks.push({ ms: r.shownMs, frameMs: r.frameMs, bytes: r.read.bytes - last.read.bytes, reads: r.read.reads - last.read.reads });
        last = r;
      }
      const sum = (xs, f) => xs.reduce((n, x) => n + f(x), 0);
      out.next = { ...spread(next.map((x) => x.ms)), frame: spread(next.map((x) => x.frameMs)), bytes: sum(next, (x) => x.bytes), reads: sum(next, (x) => x.reads), wrong: wrongNext };
      out.seek = { ...spread(seeks.map((x) => x.ms)), frame: spread(seeks.map((x) => x.frameMs)), bytes: sum(seeks, (x) => x.bytes), reads: sum(seeks, (x) => x.reads), wrong: wrongSeek };
      out.browseRead = { bytes: last.read.bytes - before.bytes, reads: last.read.reads - before.reads };
      if (c.source === 'url') out.browseSent = server.sent(new URL(c.url).pathname);
      log(`  ${c.name} keys: first page ${first.shownMs.toFixed(1)} ms; ${next.length} Next: median ${out.next.median} ms, p95 ${out.next.p95} ms; ${seeks.length} seeks: median ${out.seek.median} ms, p95 ${out.seek.p95} ms; read ${out.browseRead.bytes} bytes`);
    }
    // An object store's list, page by page (when the view has one).
    if (c.store === 'objects' && (await page.$('#objects-next')) && !(await page.isDisabled('#objects-next'))) {
      const next = [];
      let last = await page.evaluate(() => ({ read: window.inspector.read }));
      for (let i = 0; i < c.pages && !(await page.isDisabled('#objects-next')); i++) {
        const r = await timed(page, 'click', 'objects-next');
        next.push({ ms: r.shownMs, frameMs: r.frameMs, bytes: r.read.bytes - last.read.bytes, rows: r.rows });
        last = r;
      }
      out.objectNext = { ...spread(next.map((x) => x.ms)), frame: spread(next.map((x) => x.frameMs)), bytes: next.reduce((n, x) => n + x.bytes, 0), rows: next.reduce((n, x) => n + x.rows, 0) };
      log(`  ${c.name} objects: ${next.length} Next: median ${out.objectNext.median} ms, p95 ${out.objectNext.p95} ms; read ${out.objectNext.bytes} bytes`);
    }
    // A crashed page answers nothing more.
    const ask = (fn) => (failed ? page.evaluate(fn).catch(() => null) : page.evaluate(fn));
    out.totalRead = await ask(() => window.inspector.read);
    // The page's JavaScript heap now (Chromium's performance.memory; a
    // worker has none), to tell it from the rest.
    out.pageHeap = await ask(() => ({ used: performance.memory?.usedJSHeapSize ?? null, total: performance.memory?.totalJSHeapSize ?? null }));
    // What stays after a full garbage collection of the page and of its
    // workers: the peak above is mostly garbage V8 had not collected yet.
    mem.mark('gc');
    out.gcForced = await collectGarbage(browser, page);
    await sleep(1000);
    mem.mark('end');
  } finally {
    mem.stop();
    out.cpu = mem.cpu();
    await browser.close();
  }
  const blank = mem.phase('blank');
  const empty = mem.phase('empty');
  const work = mem.phases(['open', 'browse']);
  const opening = mem.phase('open');
  const browsing = mem.phase('browse');
  const collected = mem.phase('gc');
  out.memory = {
    blankPss: blank.medianPss,
    emptyPss: empty.medianPss,
    peakPss: work.peakPss,
    increasePss: work.peakPss - empty.medianPss,
    increaseOverBlankPss: work.peakPss - blank.medianPss,
    openPeakPss: opening.peakPss,
    browsePeakPss: browsing.peakPss,
    peakByKind: work.peakByKind,
    emptyByKind: empty.peakByKind,
    emptyAnon: empty.medianAnon,
    peakAnon: work.peakAnon,
    increaseAnon: work.peakAnon - empty.medianAnon,
    // The last samples of the second after the collection.
    afterGcPss: collected.lastPss,
    afterGcAnon: collected.lastAnon,
    emptyPssAnon: empty.medianPssAnon,
    peakPssAnon: work.peakPssAnon,
    increasePssAnon: work.peakPssAnon - empty.medianPssAnon,
    afterGcPssAnon: collected.lastPssAnon,
    peakRss: work.peakRss,
    samples: blank.samples + empty.samples + work.samples,
    pssSamples: blank.pssSamples + empty.pssSamples + work.pssSamples,
    meanIntervalMs: work.meanIntervalMs,
  };
  out.errors = errors;
  return out;
}
