// The key browser of a tree store or a bitable: pages of keys in either
// order, under a prefix, from a key the user types; First, Previous, Next
// and Last; a key's value opens in the value viewer. Paging is by key (the
// next page starts after the last key shown), so a page far into a large
// file costs one descent, not a walk.
import { describeError, el, fmt, parseKey, showKey } from './format.js';
import { showValue } from './value-view.js';

export class KeyBrowser {
  /** `call(op, args)` runs an inspector operation; `host` gets the view. */
  constructor(host, call, { ranked = false, fileName = 'value', pageSize } = {}) {
    this.pageSize = pageSize;
    this.call = call;
    this.ranked = ranked;
    this.fileName = fileName;
    this.rows = [];
    this.hasPrev = false;
    this.hasNext = false;
    this.prefix = el('input', { type: 'text', id: 'prefix', placeholder: 'text, or hex:00ff…', size: 22 });
    this.seek = el('input', { type: 'text', id: 'seek', placeholder: 'start at this key', size: 22 });
    this.order = el('select', { id: 'order' }, el('option', { value: 'asc', text: 'ascending' }), el('option', { value: 'desc', text: 'descending' }));
    this.size = el('select', { id: 'page-size' }, [25, 50, 100, 500].map((n) => el('option', { value: n, text: n, selected: n === 50 })));
    const form = el(
      'form',
      { class: 'toolbar', 'aria-label': 'find keys', onsubmit: (ev) => (ev.preventDefault(), this.first()) },
      el('label', {}, 'Prefix ', this.prefix),
      el('label', {}, 'From ', this.seek),
      el('label', {}, 'Order ', this.order),
      el('label', {}, 'Per page ', this.size),
      el('button', { type: 'submit', text: 'Show' }),
    );
    const nav = (text, id, fn) => el('button', { type: 'button', id, text, onclick: fn });
    this.buttons = {
      first: nav('First', 'keys-first', () => this.first()),
      prev: nav('Previous', 'keys-prev', () => this.prev()),
      next: nav('Next', 'keys-next', () => this.next()),
      last: nav('Last', 'keys-last', () => this.last()),
    };
    this.info = el('span', { class: 'note', id: 'keys-info', role: 'status' });
    this.table = el('table', { id: 'keys', class: 'grid', 'aria-label': 'keys' });
    this.table.addEventListener('keydown', (ev) => this.#keydown(ev));
    this.value = el('section', { id: 'value', class: 'value', 'aria-label': 'value', hidden: true });
    host.replaceChildren(form, el('div', { class: 'toolbar' }, Object.values(this.buttons), this.info), el('div', { class: 'cols' }, el('div', { class: 'scroll' }, this.table), this.value));
  }

  get limit() {
    return Number(this.size.value);
  }

  get desc() {
    return this.order.value === 'desc';
  }

  /** The range options every query shares (the prefix), or a thrown input error. */
  #base() {
    return this.prefix.value ? { prefix: parseKey(this.prefix.value) } : {};
  }

  /** Runs one query; `flip`: asked in the opposite order of the display. */
  async #load(options, flip) {
    const base = this.#base();
    const ask = { ...base, ...options, reverse: this.desc !== flip };
    const page = await this.call('keys', [ask, this.limit]);
    const rows = flip ? page.rows.reverse() : page.rows;
    if (rows.length === 0 && flip) return this.first();
    this.rows = rows;
    // Whether more keys lie beyond each edge of the page, one probe each.
    const beyond = async (key, after) => {
      const o = { ...base, reverse: this.desc !== !after, limit: 1 };
      o[after !== this.desc ? 'gt' : 'lt'] = key;
      const r = await this.call('keys', [o, 1]);
      return r.rows.length > 0;
    };
    if (rows.length === 0) {
      this.hasPrev = this.hasNext = false;
    } else if (flip) {
      this.hasPrev = page.more;
      this.hasNext = await beyond(rows.at(-1).key, true);
    } else {
      this.hasNext = page.more;
      this.hasPrev = await beyond(rows[0].key, false);
    }
    this.#render();
  }

  async #run(fn) {
    try {
      await fn();
    } catch (e) {
      this.rows = [];
      this.hasPrev = this.hasNext = false;
      this.#render(describeError(e, this.pageSize), e.page);
    }
    this.table.dispatchEvent(new Event('page-shown', { bubbles: true }));
  }

  first() {
    return this.#run(async () => {
      const from = this.seek.value ? parseKey(this.seek.value) : null;
      await this.#load(from ? { [this.desc ? 'lte' : 'gte']: from } : {}, false);
    });
  }

  last() {
    return this.#run(() => this.#load({}, true));
  }

  next() {
    if (!this.rows.length) return this.first();
    return this.#run(() => this.#load({ [this.desc ? 'lt' : 'gt']: this.rows.at(-1).key }, false));
  }

  prev() {
    if (!this.rows.length) return this.first();
    return this.#run(() => this.#load({ [this.desc ? 'gt' : 'lt']: this.rows[0].key }, true));
  }

  /** Shows the page starting at `key` (a bitable's select jumps here). */
  goTo(key) {
    this.seek.value = showKey(key);
    this.order.value = 'asc';
    return this.first();
  }

  /** Shows the rows, or `error` (from describeError) and the damaged page it names. */
  #render(error, page) {
    this.buttons.prev.disabled = !this.hasPrev;
    this.buttons.first.disabled = !this.hasPrev;
    this.buttons.next.disabled = !this.hasNext;
    this.buttons.last.disabled = !this.hasNext;
    const head = el('tr', {}, this.ranked ? el('th', { scope: 'col', text: 'rank' }) : null, el('th', { scope: 'col', text: 'key' }), el('th', { scope: 'col', text: 'value bytes' }));
    const rows = this.rows.map((r, i) =>
      el(
        'tr',
        { tabindex: i === 0 ? '0' : '-1', dataset: { index: i }, onclick: () => this.open(i), 'aria-label': showKey(r.key) },
        this.ranked ? el('td', { class: 'num', text: fmt(r.rank) }) : null,
        el('td', { class: 'key', text: showKey(r.key) }),
        el('td', { class: 'num', text: fmt(r.length) }),
      ),
    );
    this.table.replaceChildren(head, ...rows);
    if (error) this.info.textContent = error.text;
    else if (this.rows.length === 0) this.info.textContent = 'No keys here.';
    else {
      const span = this.ranked ? `ranks ${fmt(Math.min(this.rows[0].rank, this.rows.at(-1).rank))}–${fmt(Math.max(this.rows[0].rank, this.rows.at(-1).rank))}` : `${fmt(this.rows.length)} key${this.rows.length === 1 ? '' : 's'}`;
      this.info.textContent = `${span}, ${showKey(this.rows[0].key)} … ${showKey(this.rows.at(-1).key)}`;
    }
    this.info.dataset.state = error ? 'error' : 'ok';
    if (typeof page === 'number') this.info.dataset.page = page;
    else delete this.info.dataset.page;
  }

  #keydown(ev) {
    const tr = ev.target.closest('tr[data-index]');
    if (!tr) return;
    const i = Number(tr.dataset.index);
    const move = (j) => {
      const rows = this.table.querySelectorAll('tr[data-index]');
      if (j < 0 || j >= rows.length) return;
      tr.tabIndex = -1;
      rows[j].tabIndex = 0;
      rows[j].focus();
    };
    if (ev.key === 'ArrowDown') move(i + 1);
    else if (ev.key === 'ArrowUp') move(i - 1);
    else if (ev.key === 'Home') move(0);
    else if (ev.key === 'End') move(this.rows.length - 1);
    else if (ev.key === 'Enter' || ev.key === ' ') this.open(i);
    else if (ev.key === 'PageDown' && this.hasNext) this.next().then(() => this.table.querySelector('tr[data-index]')?.focus());
    else if (ev.key === 'PageUp' && this.hasPrev) this.prev().then(() => this.table.querySelector('tr[data-index]')?.focus());
    else return;
    ev.preventDefault();
  }

  /** Opens the value of row `i` in the viewer. */
  async open(i) {
    const r = this.rows[i];
    this.value.hidden = false;
    this.value.replaceChildren(el('p', { class: 'note', text: 'Reading…' }));
    try {
      await showValue(this.value, {
        title: showKey(r.key),
        length: r.length,
        name: `${this.fileName}-${showKey(r.key).replace(/[^\w.-]+/g, '_').slice(0, 60)}`,
        read: (offset, length) => this.call('value', [r.key, offset, length]),
      });
    } catch (e) {
      this.value.replaceChildren(el('p', { class: 'error', role: 'alert', text: describeError(e, this.pageSize).text }));
    }
    this.value.dispatchEvent(new Event('value-shown', { bubbles: true }));
  }
}
