// Pictures the inspector draws on canvases, each with a text alternative
// (a caption and a table the same numbers are in): the page map of a tree
// file, histograms and bar charts. No chart library: a few rectangles.
import { el, fmt } from './format.js';

/** Colours by page kind name; others take the palette in order. */
const KIND_COLOURS = {
  header: '#6b7280', meta: '#4b5563', branch: '#7c3aed', leaf: '#2563eb', valueBlock: '#0d9488', valueIndex: '#0f766e',
  freeList: '#ca8a04', free: '#d1d5db', unreachable: '#ea580c', bad: '#dc2626',
};
const PALETTE = ['#2563eb', '#7c3aed', '#0d9488', '#ca8a04', '#ea580c', '#db2777', '#4b5563'];
/** Kinds that win a pixel shared by several pages: damage must not hide. */
const LOUD = ['bad', 'unreachable'];

export const colourOf = (name, i) => KIND_COLOURS[name] ?? PALETTE[i % PALETTE.length];

/** "valueBlock" → "value block". */
const words = (name) => name.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase();

const css = (name) => getComputedStyle(document.documentElement).getPropertyValue(name).trim();

function canvas(width, height, label) {
  const c = el('canvas', { role: 'img', 'aria-label': label });
  const dpr = window.devicePixelRatio || 1;
  c.width = Math.round(width * dpr);
  c.height = Math.round(height * dpr);
  c.style.width = `${width}px`;
  c.style.height = `${height}px`;
  const g = c.getContext('2d');
  g.scale(dpr, dpr);
  return { c, g };
}

function legendTable(caption, head, rows) {
  return el(
    'table',
    { class: 'legend' },
    el('caption', { text: caption }),
    el('tr', {}, head.map((h) => el('th', { scope: 'col', text: h }))),
    rows.map((r) => el('tr', {}, r.map((v, i) => (v instanceof Node ? el('td', {}, v) : el('td', { class: i > 0 ? 'num' : '', text: v }))))),
  );
}

const swatch = (colour) => el('span', { class: 'swatch', style: `background:${colour}` });

/**
 * The page map: one cell per page (or per run of pages when the file has
 * more pages than the picture has cells), coloured by kind, lighter when
 * less full. Returns a <figure> with the counts as its text alternative.
 */
export function pageMap({ kinds, fill, kindNames }, width = 720) {
  const n = kinds.length;
  const cells = Math.max(1, Math.min(n, 720 * 240));
  const per = Math.ceil(n / cells);
  const shown = Math.ceil(n / per);
  const cell = Math.max(1, Math.min(12, Math.floor(Math.sqrt((width * 240) / Math.max(shown, 1)))));
  const cols = Math.max(1, Math.floor(width / cell));
  const rows = Math.ceil(shown / cols);
  const counts = new Array(kindNames.length).fill(0);
  for (const k of kinds) counts[k]++;
  const label = `Page map of ${fmt(n)} pages${per > 1 ? `, ${fmt(per)} pages per cell` : ''}: ${kindNames
    .map((name, k) => [name, counts[k]])
    .filter(([, c]) => c > 0)
    .map(([name, c]) => `${fmt(c)} ${words(name)}`)
    .join(', ')}.`;
  const { c, g } = canvas(cols * cell, rows * cell, label);
  const loud = LOUD.map((name) => kindNames.indexOf(name)).filter((k) => k >= 0);
  for (let i = 0; i < shown; i++) {
    let kind = kinds[i * per];
    let sum = 0;
    const end = Math.min(n, (i + 1) * per);
    const seen = new Map();
    for (let p = i * per; p < end; p++) {
      seen.set(kinds[p], (seen.get(kinds[p]) ?? 0) + 1);
      sum += fill[p];
    }
    // The commonest kind of the run, unless damage is in it.
    let best = -1;
    for (const [k, m] of seen) if (m > best) [kind, best] = [k, m];
    for (const k of loud) if (seen.has(k)) kind = k;
    g.fillStyle = colourOf(kindNames[kind], kind);
    g.globalAlpha = 0.35 + (0.65 * sum) / (255 * (end - i * per));
    const x = (i % cols) * cell;
    const y = Math.floor(i / cols) * cell;
    g.fillRect(x, y, Math.max(1, cell - (cell > 3 ? 1 : 0)), Math.max(1, cell - (cell > 3 ? 1 : 0)));
  }
  g.globalAlpha = 1;
  const table = legendTable(
    'Pages by kind',
    ['kind', 'pages', 'share'],
    kindNames
      .map((name, k) => [name, k])
      .filter(([, k]) => counts[k] > 0)
      .map(([name, k]) => [el('span', {}, swatch(colourOf(name, k)), ` ${words(name)}`), fmt(counts[k]), `${((100 * counts[k]) / n).toFixed(1)} %`]),
  );
  return el('figure', { class: 'plot', dataset: { plot: 'page-map' } }, c, el('figcaption', { text: label }), table);
}

/**
 * A histogram of `values` (0..max) in `bins` equal bins, with a table of
 * the counts. `label` names what is counted.
 */
export function histogram(values, { bins = 10, max = 255, label, unit = (lo, hi) => `${lo}–${hi}` }) {
  const counts = new Array(bins).fill(0);
  for (const v of values) counts[Math.min(bins - 1, Math.floor((v * bins) / (max + 1)))]++;
  const names = counts.map((_, i) => unit(Math.round((i * (max + 1)) / bins), Math.round(((i + 1) * (max + 1)) / bins)));
  return bars(
    names.map((name, i) => ({ name, value: counts[i] })),
    { label, head: ['range', 'count'], plot: 'histogram' },
  );
}

/**
 * Horizontal bars, one per item ({ name, value, part? }): `part` (at most
 * `value`) is drawn solid over the lighter whole, for "live of total".
 */
export function bars(items, { label, head = ['name', 'value'], format = fmt, plot = 'bars', width = 520 }) {
  const row = 18;
  const nameWidth = 150;
  const max = Math.max(1, ...items.map((i) => i.value));
  const caption = `${label}: ${items.map((i) => `${i.name} ${format(i.value)}${i.part !== undefined ? ` (${format(i.part)})` : ''}`).join('; ')}.`;
  const { c, g } = canvas(width, Math.max(row, items.length * row), caption);
  const ink = css('--fg') || '#222';
  const bar = css('--accent') || '#2563eb';
  g.font = '12px system-ui, sans-serif';
  g.textBaseline = 'middle';
  items.forEach((it, i) => {
    const y = i * row;
    g.fillStyle = ink;
    g.fillText(it.name.length > 22 ? `${it.name.slice(0, 21)}…` : it.name, 0, y + row / 2, nameWidth - 6);
    const w = ((width - nameWidth - 80) * it.value) / max;
    g.fillStyle = bar;
    g.globalAlpha = it.part === undefined ? 1 : 0.3;
    g.fillRect(nameWidth, y + 3, Math.max(it.value > 0 ? 1 : 0, w), row - 6);
    if (it.part !== undefined) {
      g.globalAlpha = 1;
      g.fillRect(nameWidth, y + 3, Math.max(it.part > 0 ? 1 : 0, ((width - nameWidth - 80) * it.part) / max), row - 6);
    }
    g.globalAlpha = 1;
    g.fillStyle = ink;
    g.fillText(format(it.value), nameWidth + w + 4, y + row / 2);
  });
  const rows = items.map((i) => [i.name, format(i.value), ...(i.part !== undefined ? [format(i.part)] : [])]);
  // The caption says it all in words; the table is there for copying.
  return el('figure', { class: 'plot', dataset: { plot } }, c, el('figcaption', { text: caption }), el('details', {}, el('summary', { text: 'Table' }), legendTable(label, head, rows)));
}
