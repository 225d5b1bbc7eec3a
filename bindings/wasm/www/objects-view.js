// An object store: what its index says at a glance, the objects page by
// page, one object's chunks and content, and on request the analyses that
// read the whole index (sizes, dedup savings, pack usage).
import { bytes, describeError, el, fmt, pairs, statRow } from './format.js';
import { bars, colourOf } from './plots.js';
import { showValue } from './value-view.js';

const PAGE = 50;
/** Chunks listed in the table under the chunk map. */
const CHUNK_ROWS = 200;
/** Chunks fetched for the map: an object's first this many. */
const CHUNK_MAP = 20000;

const yesNo = (b) => (b ? 'yes' : 'no');

function chunkMap(chunks, size) {
  const width = 720;
  const height = 28;
  const c = el('canvas', { role: 'img' });
  const dpr = window.devicePixelRatio || 1;
  c.width = width * dpr;
  c.height = height * dpr;
  c.style.width = `${width}px`;
  c.style.height = `${height}px`;
  const g = c.getContext('2d');
  g.scale(dpr, dpr);
  // One colour per file the chunks lie in: how scattered the object is.
  const where = (k) => k.file ?? 'the store file';
  const files = [...new Set(chunks.map(where))];
  chunks.forEach((k) => {
    const x = (k.offset / Math.max(1, size)) * width;
    const w = Math.max(1, (k.size / Math.max(1, size)) * width);
    g.fillStyle = colourOf('', files.indexOf(where(k)));
    g.fillRect(x, 0, w, height);
    if (w > 3) g.clearRect(x + w - 1, 0, 1, height);
  });
  const covered = chunks.length ? chunks.at(-1).offset + chunks.at(-1).size : 0;
  const text = `Chunk map: ${fmt(chunks.length)} chunks over ${covered < size ? `the first ${bytes(covered)} of ` : ''}${bytes(size)}, in ${fmt(files.length)} file${files.length === 1 ? '' : 's'} (${files.join(', ')}).`;
  c.setAttribute('aria-label', text);
  return el('figure', { class: 'plot', dataset: { plot: 'chunk-map' } }, c, el('figcaption', { text }));
}

export class ObjectsView {
  constructor(host, inspector, summary) {
    this.inspector = inspector;
    this.call = (op, args, progress) => inspector.call(op, args, progress);
    this.summary = summary;
    this.rows = [];
    this.overview = el('table', { id: 'objects-overview' });
    this.analysis = el('div', { id: 'objects-analysis' });
    this.list = el('table', { id: 'objects', class: 'grid', 'aria-label': 'objects' });
    this.info = el('span', { class: 'note', id: 'objects-info', role: 'status' });
    this.detail = el('section', { id: 'object', class: 'value', hidden: true, 'aria-label': 'object' });
    this.prevButton = el('button', { type: 'button', id: 'objects-prev', text: 'Previous', onclick: () => this.page(true) });
    this.nextButton = el('button', { type: 'button', id: 'objects-next', text: 'Next', onclick: () => this.page(false) });
    const find = el('input', { type: 'text', id: 'object-id', placeholder: 'object id (hex)', size: 40 });
    this.list.addEventListener('keydown', (ev) => this.#keydown(ev));
    host.replaceChildren(
      el('h2', { text: 'Overview' }),
      this.overview,
      el('div', { class: 'toolbar' },
        el('button', { type: 'button', id: 'objects-stats', text: 'Sizes and dedup (reads the whole index)', onclick: () => this.stats() }),
        el('button', { type: 'button', id: 'objects-files', text: 'Pack usage (reads the whole index)', onclick: () => this.files() }),
        el('button', { type: 'button', id: 'objects-validate', text: 'Validate (reads and rehashes every record)', onclick: () => this.validate() })),
      this.analysis,
      el('h2', { text: 'Objects' }),
      el('form', { class: 'toolbar', onsubmit: (ev) => (ev.preventDefault(), this.show(find.value.trim())) },
        el('label', {}, 'Find ', find), el('button', { type: 'submit', text: 'Show' })),
      el('div', { class: 'toolbar' }, this.prevButton, this.nextButton, this.info),
      el('div', { class: 'cols' }, el('div', { class: 'scroll' }, this.list), this.detail),
    );
    this.start();
  }

  async start() {
    try {
      const o = await this.call('objectOverview');
      this.overviewData = o;
      pairs(this.overview, Object.entries(o).map(([k, v]) => statRow(k, v)));
    } catch (e) {
      pairs(this.overview, [['error', describeError(e).text]]);
    }
    await this.load({ limit: PAGE }, false);
  }

  /** Loads a page; `back`: the page before the first row shown. */
  async load(options, back) {
    try {
      const rows = await this.call('objectList', [{ ...options, limit: PAGE + 1 }]);
      const more = rows.length > PAGE;
      if (more) rows.pop();
      if (back) rows.reverse();
      if (rows.length === 0 && back) return this.load({ limit: PAGE }, false);
      this.rows = rows;
      this.hasNext = back ? true : more;
      this.hasPrev = back ? more : options.after !== undefined;
      this.render();
    } catch (e) {
      this.rows = [];
      this.render(describeError(e).text);
    }
    this.list.dispatchEvent(new Event('page-shown', { bubbles: true }));
  }

  page(back) {
    if (!this.rows.length) return this.load({ limit: PAGE }, false);
    return back ? this.load({ after: this.rows[0].id, reverse: true }, true) : this.load({ after: this.rows.at(-1).id }, false);
  }

  render(error) {
    this.prevButton.disabled = !this.hasPrev;
    this.nextButton.disabled = !this.hasNext;
    const head = el('tr', {}, ['id', 'size', 'stored', 'chunked', 'packed', 'compressed'].map((h) => el('th', { scope: 'col', text: h })));
    this.list.replaceChildren(
      head,
      ...this.rows.map((m, i) =>
        el('tr', { tabindex: i === 0 ? '0' : '-1', dataset: { index: i }, onclick: () => this.show(m.id), 'aria-label': m.id },
          el('td', { class: 'key', title: m.id, text: m.id }),
          el('td', { class: 'num', text: fmt(m.size) }),
          el('td', { class: 'num', text: fmt(m.storedSize) }),
          el('td', { text: yesNo(m.chunked) }),
          el('td', { text: yesNo(m.packed) }),
          el('td', { text: yesNo(m.compressed) })),
      ),
    );
    this.info.textContent = error ?? (this.rows.length ? `${fmt(this.rows.length)} object${this.rows.length === 1 ? '' : 's'}` : 'No objects.');
  }

  #keydown(ev) {
    const tr = ev.target.closest('tr[data-index]');
    if (!tr) return;
    const i = Number(tr.dataset.index);
    const rows = this.list.querySelectorAll('tr[data-index]');
    const to = { ArrowDown: i + 1, ArrowUp: i - 1, Home: 0, End: rows.length - 1 }[ev.key];
    if (to !== undefined && rows[to]) {
      tr.tabIndex = -1;
      rows[to].tabIndex = 0;
      rows[to].focus();
    } else if (ev.key === 'Enter' || ev.key === ' ') this.show(this.rows[i].id);
    else return;
    ev.preventDefault();
  }

  /** One object: its metadata, chunk map and content. */
  async show(id) {
    this.detail.hidden = false;
    this.detail.replaceChildren(el('p', { class: 'note', text: 'Reading…' }));
    try {
      const meta = await this.call('objectMeta', [id]);
      const chunks = await this.call('objectChunks', [id, { limit: CHUNK_MAP }]);
      const metaTable = el('table', { id: 'object-meta' });
      pairs(metaTable, [
        ['id', meta.id],
        ['size', `${fmt(meta.size)} bytes (${bytes(meta.size)})`],
        ['stored (top record)', `${fmt(meta.storedSize)} bytes`],
        ['chunked', yesNo(meta.chunked)],
        ['packed', yesNo(meta.packed)],
        ['compressed', yesNo(meta.compressed)],
        ['chunks', fmt(chunks.length)],
        ['chunks stored', `${bytes(chunks.reduce((n, k) => n + k.storedSize, 0))}`],
      ]);
      const chunkTable = el('table', { id: 'object-chunks', class: 'grid' },
        el('caption', { text: chunks.length > CHUNK_ROWS ? `First ${CHUNK_ROWS} of ${fmt(chunks.length)} chunks` : 'Chunks' }),
        el('tr', {}, ['offset', 'size', 'stored', 'file', 'id'].map((h) => el('th', { scope: 'col', text: h }))),
        chunks.slice(0, CHUNK_ROWS).map((k) =>
          el('tr', {},
            el('td', { class: 'num', text: fmt(k.offset) }),
            el('td', { class: 'num', text: fmt(k.size) }),
            el('td', { class: 'num', text: `${fmt(k.storedSize)}${k.compressed ? ' (lz4)' : ''}` }),
            el('td', { text: k.file ?? 'the store file' }),
            el('td', { class: 'key', text: k.id.slice(0, 16), title: k.id }))));
      const content = el('div', { id: 'object-content' });
      this.detail.replaceChildren(el('h3', { text: `Object ${meta.id}` }), metaTable, chunkMap(chunks, meta.size), content, chunkTable);
      await showValue(content, { title: 'Content', length: meta.size, name: meta.id, read: (off, len) => this.call('objectRange', [id, off, len]) });
    } catch (e) {
      this.detail.replaceChildren(el('p', { class: 'error', role: 'alert', text: describeError(e).text }));
    }
    this.detail.dispatchEvent(new Event('object-shown', { bubbles: true }));
  }

  /** Sizes, dedup savings and the size distribution (reads the whole index). */
  async stats() {
    const out = el('div', { id: 'objects-stats-out' }, el('p', { class: 'note', text: 'Reading the index…' }));
    this.analysis.replaceChildren(out);
    try {
      const st = await this.call('objectStats');
      const table = el('table', {});
      pairs(table, Object.entries(st).map(([k, v]) => statRow(k, v)));
      const dedup = st.logicalBytes > 0 ? st.logicalBytes / Math.max(1, st.uniqueBytes) : 1;
      const savings = bars(
        [
          { name: 'objects hold', value: st.logicalBytes },
          { name: 'unique content', value: st.uniqueBytes },
          { name: 'stored on disk', value: st.storedBytes },
        ],
        { label: `Dedup savings (dedup ratio ${dedup.toFixed(2)}×)`, head: ['', 'bytes'], format: bytes, plot: 'dedup' },
      );
      // Sizes of every object, a page of the index at a time.
      const buckets = new Map();
      let after;
      for (;;) {
        const rows = await this.call('objectList', [{ after, limit: 1000 }]);
        for (const m of rows) {
          const b = m.size === 0 ? 0 : Math.floor(Math.log2(m.size));
          buckets.set(b, (buckets.get(b) ?? 0) + 1);
        }
        if (rows.length < 1000) break;
        after = rows.at(-1).id;
      }
      const keys = [...buckets.keys()].sort((a, b) => a - b);
      const sizes = bars(
        keys.map((b) => ({ name: b === 0 ? '< 2 B' : `${bytes(2 ** b)}–${bytes(2 ** (b + 1))}`, value: buckets.get(b) })),
        { label: 'Objects by size', head: ['size', 'objects'], plot: 'sizes' },
      );
      out.replaceChildren(el('h3', { text: 'Sizes' }), table, savings, sizes);
      out.dataset.dedup = dedup;
    } catch (e) {
      out.replaceChildren(el('p', { class: 'error', role: 'alert', text: describeError(e).text }));
    }
    out.dispatchEvent(new Event('analysis-done', { bubbles: true }));
  }

  /** Live and dead bytes of every pack and staging file. */
  async files() {
    const bar = el('progress', { max: 1, value: 0, 'aria-label': 'reading the index' });
    const out = el('div', { id: 'objects-files-out' }, bar);
    this.analysis.replaceChildren(out);
    try {
      const files = await this.call('objectFiles', [], (done, total) => {
        bar.max = Math.max(1, total);
        bar.value = done;
      });
      // A file the index names but that is missing has no size: its live bytes stand in.
      const size = (f) => f.fileBytes ?? f.committedBytes ?? f.liveBytes;
      const items = files.map((f) => ({ name: `${f.file ?? 'the store file'}${f.fileBytes === null ? ' (missing)' : ''}`, value: size(f), part: f.liveBytes }));
      const live = files.reduce((n, f) => n + f.liveBytes, 0);
      const all = files.reduce((n, f) => n + size(f), 0);
      out.replaceChildren(
        bars(items, { label: `Pack usage: ${bytes(live)} live of ${bytes(all)}`, head: ['file', 'bytes', 'live bytes'], format: bytes, plot: 'packs' }),
      );
    } catch (e) {
      out.replaceChildren(el('p', { class: 'error', role: 'alert', text: describeError(e).text }));
    }
    out.dispatchEvent(new Event('analysis-done', { bubbles: true }));
  }

  /**
   * Reads and rehashes every record with a progress bar; Stop ends the
   * worker (the store must be opened again). Problems are listed by object
   * and file.
   */
  async validate() {
    const bar = el('progress', { id: 'validate-progress', max: 1, value: 0, 'aria-label': 'validate progress' });
    const status = el('span', { class: 'note', id: 'validate-status', role: 'status', text: 'validating…' });
    let stopped = false;
    const stop = el('button', { type: 'button', id: 'validate-stop', text: 'Stop', onclick: () => ((stopped = true), this.inspector.stop('validate stopped')) });
    const out = el('div', { id: 'objects-validate-out' }, el('div', { class: 'toolbar' }, stop, bar, status));
    this.analysis.replaceChildren(out);
    const result = el('div', {});
    out.append(result);
    try {
      const r = await this.call('objectValidate', [{}], (done, total) => {
        bar.max = Math.max(1, total);
        bar.value = done;
        bar.dataset.done = done;
        bar.dataset.total = total;
        status.textContent = `${bytes(done)} of ${bytes(total)} of records`;
      });
      bar.value = bar.max;
      const n = r.problems.length;
      status.textContent = r.ok
        ? `ok: ${fmt(r.objectsChecked)} objects, ${fmt(r.recordsChecked)} records, ${bytes(r.bytesChecked)} rehashed`
        : `${fmt(n)} problem${n === 1 ? '' : 's'} in ${fmt(r.recordsChecked)} records`;
      out.dataset.ok = String(r.ok);
      out.dataset.problems = n;
      if (n) {
        result.replaceChildren(
          el('table', { id: 'validate-problems', class: 'grid' },
            el('caption', { text: 'Problems' }),
            el('tr', {}, ['object', 'file', 'problem'].map((h) => el('th', { scope: 'col', text: h }))),
            r.problems.map((p) =>
              el('tr', {},
                el('td', { class: 'key', title: p.id ?? '', text: p.id ?? '–' }),
                el('td', { text: p.file ?? '–' }),
                el('td', { text: `${p.code}: ${p.message}` })))),
        );
      }
    } catch (e) {
      const d = describeError(e);
      status.textContent = '';
      result.replaceChildren(el('p', { class: 'error', role: 'alert', text: stopped ? 'Validation stopped; open the store again to go on.' : d.text }));
      out.dataset.code = d.code;
    } finally {
      stop.disabled = true;
    }
    out.dispatchEvent(new Event('analysis-done', { bubbles: true }));
  }
}
