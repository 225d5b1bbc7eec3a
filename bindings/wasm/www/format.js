// Formatting shared by the inspector's views: sizes, counts, keys as text
// or hex, and keys typed by the user.

const utf8 = new TextDecoder('utf-8', { fatal: true });

export const hex = (b) => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');

export const fmt = (n) => (typeof n === 'number' ? n.toLocaleString('en-US') : String(n));

/** 1536 → "1.50 KiB". */
export function bytes(n) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${i === 0 ? n : n.toFixed(n < 10 ? 2 : 1)} ${units[i]}`;
}

/** Text when the bytes are printable UTF-8, else `hex:…`. */
export function showKey(b) {
  try {
    const s = utf8.decode(b);
    if (!/[\u0000-\u001f\u007f]/.test(s)) return s === '' ? '(empty)' : s;
  } catch {
    // Not UTF-8: hex below.
  }
  return `hex:${hex(b)}`;
}

/** A key typed by the user: text, or `hex:` and an even number of digits. */
export function parseKey(text) {
  if (!text.startsWith('hex:')) return new TextEncoder().encode(text);
  const h = text.slice(4);
  if (!/^([0-9a-fA-F]{2})*$/.test(h)) throw Object.assign(new Error('a hex key is hex: and an even number of hex digits'), { code: 'INVALID_ARGUMENT' });
  return Uint8Array.from(h.match(/../g) ?? [], (x) => parseInt(x, 16));
}

/** Text of UTF-8 bytes, or null when they are not text. */
export function asText(b) {
  try {
    const s = utf8.decode(b);
    // Control characters other than tab and line ends: binary.
    return /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.test(s) ? null : s;
  } catch {
    return null;
  }
}

/** An error as the page shows it: code, message, page and file offset. */
export function describeError(e, pageSize) {
  const code = e.code ?? e.name ?? 'Error';
  const message = (e.message ?? String(e)).replace(new RegExp(`^${code}: `), '');
  let where = '';
  if (typeof e.page === 'number') {
    // The core's messages often name the page already.
    const named = new RegExp(`\\bpage ${e.page}\\b`).test(message);
    const offset = pageSize ? `offset ${fmt(e.page * pageSize)}` : '';
    where = named ? (offset ? ` (${offset})` : '') : ` (page ${fmt(e.page)}${offset ? `, ${offset}` : ''})`;
  }
  return { code, message, where, text: `${code}: ${message}${where}` };
}

/** A statistic's name and value as the page shows them: "leafFill" → "leaf fill", sizes in bytes, fills in %. */
export function statRow(name, v) {
  const label = name.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase();
  if (v === null || v === undefined) return [label, 'unknown'];
  if (typeof v !== 'number') return [label, String(v)];
  if (/Bytes$/.test(name)) return [label, `${fmt(v)} (${bytes(v)})`];
  if (/Fill$|^fill$|Share$/.test(name)) return [label, `${(v * 100).toFixed(1)} %`];
  return [label, Number.isInteger(v) ? fmt(v) : v.toFixed(1)];
}

/** Creates an element with attributes and children. */
export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(e.dataset, v);
    else e.setAttribute(k, v === true ? '' : v);
  }
  e.append(...children.flat().filter((c) => c !== undefined && c !== null));
  return e;
}

/** A two-column table of [label, value] rows. */
export function pairs(table, rows) {
  table.replaceChildren(...rows.map(([k, v]) => el('tr', {}, el('th', { scope: 'row', text: k }), v instanceof Node ? el('td', {}, v) : el('td', { text: v }))));
}
