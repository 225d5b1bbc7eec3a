// The value viewer: a value (of a key, or an object's content) as text,
// hex, pretty JSON or an image, and its download. It reads through
// `read(offset, length)`, only as much as the chosen view shows.
import { asText, bytes, el, fmt, hex } from './format.js';

/** What the text and hex views read at first, and per "more". */
const STEP = 64 * 1024;
/** Largest value parsed as JSON, or shown as an image. */
const JSON_MAX = 4 << 20;
const IMAGE_MAX = 32 << 20;
/** Download reads in parts of this size. */
const PART = 4 << 20;

const IMAGE_TYPES = [
  ['image/png', [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]],
  ['image/jpeg', [0xff, 0xd8, 0xff]],
  ['image/gif', [0x47, 0x49, 0x46, 0x38]],
];

/** The image type the first bytes say, or null. */
export function imageType(b) {
  for (const [type, magic] of IMAGE_TYPES) if (magic.every((x, i) => b[i] === x)) return type;
  // RIFF....WEBP
  if (b.length >= 12 && String.fromCharCode(...b.subarray(0, 4)) === 'RIFF' && String.fromCharCode(...b.subarray(8, 12)) === 'WEBP') {
    return 'image/webp';
  }
  return null;
}

function hexDump(b, base) {
  const lines = [];
  for (let i = 0; i < b.length; i += 16) {
    const row = b.subarray(i, i + 16);
    const h = hex(row).replace(/(..)/g, '$1 ').padEnd(48);
    const a = Array.from(row, (x) => (x >= 0x20 && x < 0x7f ? String.fromCharCode(x) : '.')).join('');
    lines.push(`${(base + i).toString(16).padStart(8, '0')}  ${h} ${a}`);
  }
  return lines.join('\n');
}

/**
 * Fills `host` with a viewer for a value of `length` bytes. `name` is the
 * download's file name. Returns a promise settled when the first view is
 * shown (tests wait on it).
 */
export async function showValue(host, { title, length, read, name }) {
  const head = await read(0, Math.min(length, STEP));
  const image = imageType(head);
  const text = asText(head);
  let json = null;
  if (text !== null && length <= JSON_MAX && /^\s*[[{"\d-tfn]/.test(text)) {
    try {
      const whole = length <= head.length ? head : await read(0, length);
      json = JSON.stringify(JSON.parse(new TextDecoder().decode(whole)), null, 2);
    } catch {
      json = null;
    }
  }
  const modes = [
    ['text', 'Text', text !== null],
    ['hex', 'Hex', true],
    ['json', 'JSON', json !== null],
    ['image', 'Image', image !== null && length <= IMAGE_MAX],
  ].filter(([, , ok]) => ok);
  const first = image && length <= IMAGE_MAX ? 'image' : json !== null ? 'json' : text !== null ? 'text' : 'hex';
  const body = el('div', { class: 'value-body', tabindex: '0', 'aria-label': 'value' });
  const status = el('span', { class: 'note', role: 'status' });
  const tabs = el('div', { role: 'radiogroup', 'aria-label': 'show the value as', class: 'modes' });
  let shownBytes = head;

  async function render(mode) {
    host.dataset.mode = mode;
    for (const b of tabs.children) b.setAttribute('aria-checked', String(b.dataset.mode === mode));
    if (mode === 'image') {
      const whole = length <= head.length ? head : await read(0, length);
      const url = URL.createObjectURL(new Blob([whole], { type: image }));
      const img = el('img', { src: url, alt: `${title}: ${image} image, ${bytes(length)}`, class: 'preview' });
      img.onload = () => {
        // Small images (icons, thumbnails) are scaled up, pixels kept sharp.
        const scale = Math.floor(Math.min(8, 256 / Math.max(img.naturalWidth, img.naturalHeight)));
        if (scale > 1) {
          img.style.width = `${img.naturalWidth * scale}px`;
          img.style.imageRendering = 'pixelated';
        }
        host.dataset.imageWidth = img.naturalWidth;
        host.dataset.imageHeight = img.naturalHeight;
        host.dispatchEvent(new Event('image-shown'));
      };
      body.replaceChildren(img);
      return;
    }
    if (mode === 'json') {
      body.replaceChildren(el('pre', { class: 'json', text: json }));
      return;
    }
    const pre = el('pre', { text: mode === 'hex' ? hexDump(shownBytes, 0) : asText(shownBytes) ?? '' });
    const parts = [pre];
    if (shownBytes.length < length) {
      parts.push(
        el('button', {
          type: 'button',
          text: `Show ${bytes(Math.min(STEP, length - shownBytes.length))} more (${bytes(shownBytes.length)} of ${bytes(length)} shown)`,
          onclick: async () => {
            const more = await read(shownBytes.length, Math.min(STEP, length - shownBytes.length));
            const joined = new Uint8Array(shownBytes.length + more.length);
            joined.set(shownBytes);
            joined.set(more, shownBytes.length);
            shownBytes = joined;
            render(mode);
          },
        }),
      );
    }
    body.replaceChildren(...parts);
  }

  for (const [mode, label] of modes) {
    tabs.append(
      el('button', {
        type: 'button',
        role: 'radio',
        text: label,
        dataset: { mode },
        onclick: () => render(mode),
        onkeydown: (ev) => {
          const i = modes.findIndex(([m]) => m === mode);
          const step = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 }[ev.key];
          if (!step) return;
          ev.preventDefault();
          const next = tabs.children[(i + step + modes.length) % modes.length];
          next.focus();
          next.click();
        },
      }),
    );
  }

  const download = el('button', {
    type: 'button',
    text: `Download (${bytes(length)})`,
    onclick: async () => {
      const parts = [];
      for (let off = 0; off < length; off += PART) {
        status.textContent = `reading ${bytes(off)} of ${bytes(length)}…`;
        parts.push(await read(off, Math.min(PART, length - off)));
      }
      status.textContent = '';
      const url = URL.createObjectURL(new Blob(parts, { type: image ?? 'application/octet-stream' }));
      const a = el('a', { href: url, download: name });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
    },
  });

  host.replaceChildren(
    el('h3', { text: title }),
    el('p', { class: 'note', text: `${fmt(length)} bytes (${bytes(length)})${image ? `, ${image}` : ''}` }),
    el('div', { class: 'toolbar' }, tabs, download, status),
    body,
  );
  await render(first);
}
