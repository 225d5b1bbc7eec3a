// Check: verifies every page of a tree store (or a bitable) with a
// progress bar and a Stop button, lists the problems by page with their
// file offsets, and for a tree store draws the page map and the fill of
// its node pages from the same walk.
import { describeError, el, fmt } from './format.js';
import { histogram, pageMap } from './plots.js';

export class CheckView {
  constructor(host, inspector, { kind, pageSize, fileBytes }) {
    this.inspector = inspector;
    this.kind = kind;
    this.pageSize = pageSize;
    this.fileBytes = fileBytes;
    this.button = el('button', { type: 'button', id: 'check-run', text: 'Check every page', onclick: () => this.run() });
    this.stopButton = el('button', { type: 'button', id: 'check-stop', text: 'Stop', disabled: true, onclick: () => this.stop() });
    this.bar = el('progress', { id: 'check-progress', max: 1, value: 0, 'aria-label': 'check progress' });
    this.status = el('span', { class: 'note', id: 'check-status', role: 'status' });
    this.result = el('div', { id: 'check-result' });
    host.replaceChildren(
      el('p', { class: 'note', text: 'Reads the whole file once and verifies every page: checksums, key order, the tree, large values, the free list.' }),
      el('div', { class: 'toolbar' }, this.button, this.stopButton, this.bar, this.status),
      this.result,
    );
  }

  stop() {
    this.stopped = true;
    this.inspector.stop('check stopped');
  }

  async run() {
    this.button.disabled = true;
    this.stopButton.disabled = false;
    this.stopped = false;
    this.bar.value = 0;
    this.result.replaceChildren();
    this.status.textContent = 'checking…';
    const progress = (done, total) => {
      this.bar.max = Math.max(1, total);
      this.bar.value = done;
      this.status.textContent = `${fmt(done)} of ${fmt(total)} pages`;
      this.bar.dataset.done = done;
      this.bar.dataset.total = total;
    };
    try {
      const options = this.kind === 'tree' ? { pageMap: true } : undefined;
      const r = await this.inspector.call('check', [options], progress);
      this.show(r);
    } catch (e) {
      const d = describeError(e, this.pageSize);
      this.status.textContent = '';
      this.result.replaceChildren(el('p', { class: 'error', role: 'alert', text: this.stopped ? 'Check stopped; open the file again to go on.' : d.text }));
      this.result.dataset.code = d.code;
    } finally {
      this.button.disabled = this.stopped;
      this.stopButton.disabled = true;
    }
    this.result.dispatchEvent(new Event('check-done', { bubbles: true }));
  }

  show(r) {
    const pages = r.pages ?? r.pagesChecked;
    this.bar.max = Math.max(1, pages);
    this.bar.value = pages;
    const problems = r.problems ?? [];
    const count = r.problemCount ?? problems.length;
    this.status.textContent = r.ok ? `ok: ${fmt(pages)} pages verified` : `${fmt(count)} problems in ${fmt(pages)} pages`;
    this.result.dataset.ok = String(r.ok);
    this.result.dataset.problems = count;
    const parts = [];
    if (problems.length) {
      parts.push(
        el(
          'table',
          { id: 'check-problems', class: 'grid' },
          el('caption', { text: `Problems${count > problems.length ? ` (first ${fmt(problems.length)} of ${fmt(count)})` : ''}` }),
          el('tr', {}, ['page', 'offset', 'problem'].map((h) => el('th', { scope: 'col', text: h }))),
          problems.map((p) => {
            const page = p.page ?? null;
            return el(
              'tr',
              {},
              el('td', { class: 'num', text: page === null ? '–' : fmt(page) }),
              el('td', { class: 'num', text: page === null || !this.pageSize ? '–' : fmt(page * this.pageSize) }),
              el('td', { text: p.code ? `${p.code}: ${p.message}` : p.message }),
            );
          }),
        ),
      );
    }
    if (r.pageMap) {
      const m = r.pageMap;
      parts.push(el('h3', { text: 'Page map' }), pageMap(m));
      const nodeKinds = new Set(['leaf', 'branch'].map((n) => m.kindNames.indexOf(n)).filter((k) => k >= 0));
      const fills = [];
      for (let p = 0; p < m.kinds.length; p++) if (nodeKinds.has(m.kinds[p])) fills.push(m.fill[p]);
      if (fills.length) {
        parts.push(
          el('h3', { text: 'Fill of node pages' }),
          histogram(fills, { label: 'Node pages by fill', unit: (lo, hi) => `${Math.round((lo * 100) / 256)}–${Math.round((hi * 100) / 256)} %` }),
        );
      }
    }
    this.result.replaceChildren(...parts);
  }
}
