// The tables of the inspector benchmark, from its results (one object per
// case and run, as bench/inspector/run.mjs writes them), and the ratios of
// bale to its peer, sql.js, for the same keys. As a command:
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
  // An open that failed (a file too large for the peer) has no figures.
  if (!o.length) return { openMs: null, openMaxMs: null, openPageMs: null, openBytes: null, openSent: null, overviewMs: null, overviewMaxMs: null, overviewBytes: null };
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
    if (r.failure) {
      const x = r.failure;
      rows.push([`${name} †`, size(r.fileBytes), `failed after ${ms(x.wallMs)}`, `${kib(x.read?.bytes)}${x.sent ? ` (sent ${mib(x.sent.bytes)})` : ''}`, '–', '–', '–', '–', '–', '–', mib(r.memory.peakPss), `+${mib(r.memory.increasePssAnon)} / +${mib(r.memory.afterGcPssAnon - r.memory.emptyPssAnon)}`, `+${mib(r.memory.increaseAnon)}`, `${r.cpu.othersCores}`]);
      limits.push([`${name} †`, 'failed', '–', '–', '–', ratio(r.memory.increasePssAnon, LIMITS.memory), ratio(r.memory.increaseAnon, LIMITS.memory), ratio(r.memory.peakPss, LIMITS.memory)]);
      notes.push(`† ${name}: the ${size(r.fileBytes)} file did not open (${x.state}${x.code ? `, ${x.code}` : ''}): ${x.error ?? x.status ?? ''}`);
      continue;
    }
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
  console.log('Other load: cores busy with other work during the case, on average.');
  if (rs.some((r) => r.peer)) console.log(`The peer, ${[...new Set(rs.filter((r) => r.peer).map((r) => `${r.peer} ${r.peerVersion}`))].join(', ')} (sqljs-*): its open and its overview are the file picked (or the URL) to its first page of 50 keys shown (the whole file read, opened, that page queried), and its first page the Keys tab clicked again.`);
  console.log('');
  table(['case', 'file', 'open ms', 'open read', 'overview ms', 'overview read', 'first page ms', 'Next ms', 'seek ms', 'read per seek', 'PSS peak', 'anon PSS: peak / after GC', 'anon RSS peak', 'other load'], rows);
  console.log('\nAgainst the limits (measured / limit, under 1× is within): overview shown < 1 s (median, max), read by then < 1 MiB, a page < 50 ms (p95 to the event, to the next frame), memory < 256 MiB.\n');
  table(['case', 'overview time', 'overview read', 'Next p95', 'seek p95', 'anon PSS over empty page', 'anon RSS over empty page', 'PSS peak, whole browser'], limits);
  for (const n of notes) console.log(`\n${n}`);
  peerRatios(rs);
}

/**
 * bale against sql.js on the same keys: tree-file against sqljs-file and
 * tree-url against sqljs-url, of the same run, or else of the latest run
 * in `rs` that has the bale case.
 */
function peerRatios(rs) {
  const rows = [];
  for (const peer of rs.filter((r) => r.peer && !r.failure && /^sqljs-(file|url)$/.test(r.case))) {
    const want = peer.case.replace(/^sqljs-/, 'tree-');
    const bale = rs.find((r) => r.case === want && r.date === peer.date) ?? rs.filter((r) => r.case === want).sort((a, b) => a.date.localeCompare(b.date)).at(-1);
    if (!bale) continue;
    const b = figures(bale);
    const p = figures(peer);
    const cell = (x, y, show) => (x === null || x === undefined || y === null || y === undefined ? '–' : `${show(x)} / ${show(y)} (${y === 0 ? '–' : `${Number((x / y).toPrecision(3))}×`})`);
    const amount = (n) => (n >= MiB ? mib(n) : kib(n));
    const after = (r) => r.memory.afterGcPssAnon - r.memory.emptyPssAnon;
    // sql.js shows its overview, a first page of keys, when it has opened.
    const overview = (f) => f.overviewMs ?? f.openMs;
    rows.push([
      `${bale.case} / ${peer.case}${bale.date === peer.date ? '' : ` (bale of ${bale.date.slice(0, 19)})`}`,
      `${size(bale.fileBytes)} / ${size(peer.fileBytes)}`,
      cell(b.openMs, p.openMs, ms),
      cell(overview(b), overview(p), ms),
      cell(bale.firstPage ? overview(b) + bale.firstPage.ms : null, overview(p), ms),
      cell(b.overviewBytes ?? b.openBytes, p.overviewBytes ?? p.openBytes, amount),
      cell(bale.next?.p95, peer.next?.p95, ms),
      cell(bale.seek?.p95, peer.seek?.p95, ms),
      cell(bale.memory.increasePssAnon, peer.memory.increasePssAnon, mib),
      cell(after(bale), after(peer), mib),
    ]);
  }
  if (!rows.length) return;
  console.log('\nbale / sql.js on the same small pairs (bale\'s store also holds the 4 large values; sql.js\'s database only the small pairs): bale / sql.js (ratio; under 1× bale is smaller or faster).');
  console.log('Open: to bale\'s summary, to sql.js\'s first page of keys. Overview: to bale\'s estimated shape shown, to sql.js\'s first page; read by then. First keys page: bale\'s overview, then its Keys tab\'s first page. Times are medians, p95 for Next and seek; memory is the anonymous part of PSS over the page with nothing open.\n');
  table(['bale / sql.js', 'file', 'open ms', 'overview ms', 'first keys page ms', 'read by overview', 'Next p95 ms', 'seek p95 ms', 'anon PSS peak increase', 'anon PSS after GC'], rows);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const rs = process.argv.slice(2).flatMap((f) => readFileSync(f, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)));
  report(rs);
}
