// The tables of the inspector benchmark, from its results (one object per
// case and run, as bench/inspector/run.mjs writes them). As a command:
// `node bench/inspector/report.mjs bench/results/inspector-*.jsonl` prints
// the tables of every run in those files.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const MiB = 1 << 20;
/** The inspector's limits: open in under 1 s reading under 1 MiB, a page in under 50 ms, under 256 MiB. */
export const LIMITS = { openMs: 1000, openBytes: MiB, pageMs: 50, memory: 256 * MiB };

const size = (b) => (b >= 1 << 30 ? `${(b / (1 << 30)).toFixed(2)} GiB` : mib(b));
const mib = (b) => (b === null || b === undefined || Number.isNaN(b) ? '–' : `${(b / MiB).toFixed(1)} MiB`);
const kib = (b) => (b === null || b === undefined ? '–' : `${(b / 1024).toFixed(1)} KiB`);
const ms = (x) => (x === null || x === undefined ? '–' : x.toFixed(1));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
const ratio = (v, limit) => (v === null || v === undefined || Number.isNaN(v) ? '–' : `${(v / limit).toFixed(3)}×`);

function table(head, body) {
  const w = head.map((h, i) => Math.max(h.length, ...body.map((row) => String(row[i]).length)));
  const line = (cells) => `| ${cells.map((c, i) => String(c).padEnd(w[i])).join(' | ')} |`;
  console.log([line(head), line(w.map((n) => '-'.repeat(n))), ...body.map(line)].join('\n'));
}

/**
 * The figures of one case's run that the tables show. The overview is
 * complete when a tree store's estimated shape shows, or an object store's
 * Objects tab is filled (its overview and a first page of objects): that
 * is what the limits are compared with.
 */
export function figures(r) {
  const o = r.opens;
  const shown = o[0].overviewWallMs !== undefined;
  return {
    openMs: median(o.map((x) => x.wallMs)),
    openMaxMs: Math.max(...o.map((x) => x.wallMs)),
    openPageMs: median(o.map((x) => x.pageMs)),
    openBytes: Math.max(...o.map((x) => x.bytes)),
    openSent: o[0].sent ? Math.max(...o.map((x) => x.sent.bytes)) : null,
    overviewMs: shown ? median(o.map((x) => x.overviewWallMs)) : null,
    overviewMaxMs: shown ? Math.max(...o.map((x) => x.overviewWallMs)) : null,
    overviewBytes: shown ? Math.max(...o.map((x) => x.overviewBytes)) : null,
  };
}

/** Prints the tables for `rs`, runs of cases. */
export function report(rs) {
  const rows = [];
  const limits = [];
  const notes = [];
  const runs = new Set(rs.map((r) => r.date)).size;
  for (const r of rs) {
    const f = figures(r);
    const name = runs > 1 ? `${r.case} (${r.date.slice(0, 19)})` : r.case;
    const filled = r.store !== 'objects' || r.opens[0].overviewFilled;
    const page = (x) => (x ? `${ms(x.median)} / ${ms(x.p95)} (${ms(x.frame.p95)})` : '–');
    rows.push([
      `${name}${filled ? '' : ' *'}`,
      size(r.fileBytes),
      `${ms(f.openMs)} / ${ms(f.openMaxMs)} (${ms(f.openPageMs)})`,
      `${kib(f.openBytes)}${f.openSent !== null ? ` (sent ${kib(f.openSent)})` : ''}`,
      f.overviewMs !== null ? `${ms(f.overviewMs)} / ${ms(f.overviewMaxMs)}` : '–',
      kib(f.overviewBytes),
      r.firstPage ? ms(r.firstPage.ms) : '–',
      page(r.next ?? r.objectNext),
      page(r.seek),
      r.seek ? kib(r.seek.bytes / r.seek.n) : '–',
      mib(r.memory.peakPss),
      `+${mib(r.memory.increasePssAnon)} / +${mib(r.memory.afterGcPssAnon - r.memory.emptyPssAnon)}`,
      `+${mib(r.memory.increaseAnon)}`,
      `${r.cpu.othersCores}`,
    ]);
    limits.push([
      name,
      f.overviewMs !== null ? `${ratio(f.overviewMs, LIMITS.openMs)} (max ${ratio(f.overviewMaxMs, LIMITS.openMs)})` : `${ratio(f.openMs, LIMITS.openMs)} (max ${ratio(f.openMaxMs, LIMITS.openMs)})`,
      ratio(f.overviewBytes ?? f.openBytes, LIMITS.openBytes),
      r.next ?? r.objectNext ? `${ratio((r.next ?? r.objectNext).p95, LIMITS.pageMs)} (${ratio((r.next ?? r.objectNext).frame.p95, LIMITS.pageMs)})` : '–',
      r.seek ? `${ratio(r.seek.p95, LIMITS.pageMs)} (${ratio(r.seek.frame.p95, LIMITS.pageMs)})` : '–',
      ratio(r.memory.increasePssAnon, LIMITS.memory),
      ratio(r.memory.increaseAnon, LIMITS.memory),
      ratio(r.memory.peakPss, LIMITS.memory),
    ]);
    if (!filled) notes.push(`* ${name}: #objects-overview not filled with numbers: ${r.opens[0].overviewText}`);
    if (r.errors.length) notes.push(`${name}: page errors: ${[...new Set(r.errors)].join(' | ')}`);
    if (r.next?.wrong || r.seek?.wrong) notes.push(`${name}: pages whose first key was not the one expected: ${r.next.wrong} after Next, ${r.seek.wrong} after a seek`);
  }
  const versions = [...new Set(rs.map((r) => `chromium ${r.chromium}, ${r.commit}${r.dirty ? ' with changes' : ''}`))].join('; ');
  console.log(`\nBrowser inspector (${versions}). Times in ms: median / p95 (p95 to the next frame); open: wall median / max (in the page, median).`);
  console.log('Overview: from the file picked (or the address loaded) to the overview complete: a tree store\'s estimated shape shown, an object store\'s Objects tab filled (overview and first page of objects); median / max, and the bytes read by then. The limits are compared with it.');
  console.log('First page: the Keys tab clicked to its first page shown.');
  console.log('Memory, of all the browser\'s processes: PSS at its peak; the anonymous part of PSS (heaps, wasm memory, buffers; sampled every 1 s) over the inspector page with nothing open, at its peak and after a forced GC; and RssAnon + RssShmem over that page\'s (every 100 ms).');
  console.log('Other load: cores busy with other work during the case, on average.\n');
  table(['case', 'file', 'open ms', 'open read', 'overview ms', 'overview read', 'first page ms', 'Next ms', 'seek ms', 'read per seek', 'PSS peak', 'anon PSS: peak / after GC', 'anon RSS peak', 'other load'], rows);
  console.log('\nAgainst the limits (measured / limit, under 1× is within): overview shown < 1 s (median, max), read by then < 1 MiB, a page < 50 ms (p95 to the event, to the next frame), memory < 256 MiB.\n');
  table(['case', 'overview time', 'overview read', 'Next p95', 'seek p95', 'anon PSS over empty page', 'anon RSS over empty page', 'PSS peak, whole browser'], limits);
  for (const n of notes) console.log(`\n${n}`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const rs = process.argv.slice(2).flatMap((f) => readFileSync(f, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)));
  report(rs);
}
