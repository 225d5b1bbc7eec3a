// The inspector page: picks a file, a folder or a URL (or takes one dropped
// on the page, or `?url=` in the address), opens it in the inspector's
// worker and shows it in tabs. Everything is read lazily in the worker;
// the counter under the header shows what has been read so far.
import { CheckView } from './check-view.js';
import { Inspector } from './client.js';
import { bytes, describeError, el, fmt, pairs, parseKey, showKey, statRow } from './format.js';
import { KeyBrowser } from './keys-view.js';
import { ObjectsView } from './objects-view.js';
import { bars } from './plots.js';

const $ = (id) => document.getElementById(id);
const inspector = new Inspector();
/** What tests and curious users can look at: the open store and the counter. */
const state = (window.inspector = { summary: null, read: { bytes: 0, reads: 0 } });

const KIND_NAMES = { tree: 'tree store', bitable: 'bitable', objects: 'object store' };

inspector.onRead = (read) => {
  state.read = read;
  // A folder read by URL is found file by file: its size is what was found so far.
  const total = read.fileBytes ?? state.summary?.fileBytes;
  const of = total ? ` of ${bytes(total)}${state.summary?.filesFound ? ' found so far' : ''}` : '';
  $('read').value = `${bytes(read.bytes)}${of} in ${fmt(read.reads)} reads`;
  document.body.dataset.bytesRead = read.bytes;
};

const call = (op, args, progress) => inspector.call(op, args, progress);

function status(text, cls = '') {
  $('status').textContent = text;
  $('status').className = cls;
}

function showError(e, what) {
  const d = describeError(e, state.summary?.pageSize);
  $('error').replaceChildren(el('code', { text: d.code }), ` ${what ? `${what}: ` : ''}${d.message}${d.where}`);
  $('error').hidden = false;
  document.body.dataset.state = 'error';
  document.body.dataset.code = d.code;
  status(`Could not open ${what ?? 'it'}.`, 'error');
}

/** Tabs in the WAI-ARIA pattern: arrows move between them, panels render on first show. */
function makeTabs(tabs) {
  const list = $('tabs');
  const panels = $('panels');
  list.replaceChildren();
  panels.replaceChildren();
  const made = tabs.map((t, i) => {
    const tab = el('button', { role: 'tab', id: `tab-${t.id}`, 'aria-controls': `panel-${t.id}`, 'aria-selected': 'false', tabindex: '-1', text: t.label });
    const panel = el('section', { role: 'tabpanel', id: `panel-${t.id}`, 'aria-labelledby': `tab-${t.id}`, hidden: true, tabindex: '0' });
    let rendered = false;
    const show = () => {
      for (const m of made) {
        m.tab.setAttribute('aria-selected', String(m.tab === tab));
        m.tab.tabIndex = m.tab === tab ? 0 : -1;
        m.panel.hidden = m.panel !== panel;
      }
      if (!rendered) {
        rendered = true;
        t.render(panel);
      }
    };
    tab.addEventListener('click', show);
    tab.addEventListener('keydown', (ev) => {
      const step = { ArrowRight: 1, ArrowLeft: -1, Home: -i, End: made.length - 1 - i }[ev.key];
      if (step === undefined) return;
      ev.preventDefault();
      const next = made[(i + step + made.length) % made.length];
      next.tab.focus();
      next.show();
    });
    list.append(tab);
    panels.append(panel);
    return { tab, panel, show };
  });
  made[0]?.show();
  return made;
}

function summaryRows(s) {
  const rows = [
    ['name', s.name],
    ['kind', KIND_NAMES[s.kind] + (s.objects ? ' (a single-file object store)' : '')],
    ['format', `version ${s.formatVersion}`],
    [s.kind === 'objects' && !s.singleFile ? 'files' : 'file size', `${fmt(s.fileBytes)} bytes (${bytes(s.fileBytes)})`],
  ];
  if (s.pageSize) rows.push(['page size', `${fmt(s.pageSize)} bytes`], ['pages', fmt(Math.ceil(s.fileBytes / s.pageSize))]);
  if (s.count !== undefined) rows.push(['entries', fmt(s.count)]);
  if (s.hash) rows.push(['object ids', s.hash]);
  return rows;
}

/** Overview of a tree store: what opening read, and the full statistics on request. */
function treeOverview(panel, s) {
  const table = el('table', { id: 'overview' });
  pairs(table, [...summaryRows(s), ['checksums', 'every page read so far verified; Check verifies them all']]);
  const statTable = el('table', { id: 'stat' });
  const statButton = el('button', {
    type: 'button',
    id: 'stat-run',
    text: 'Analyze the tree (reads every node page)',
    onclick: async () => {
      statButton.disabled = true;
      try {
        const st = await call('stat');
        const rows = Object.entries(st).map(([k, v]) => statRow(k, v));
        // Large values are compressed in blocks when that pays; inline ones are stored as written.
        if (st.largeValueBytes > 0) rows.push(['large value compression', `${(st.largeValueBytes / Math.max(1, st.largeStoredBytes)).toFixed(2)}× (${bytes(st.largeValueBytes)} in ${bytes(st.largeStoredBytes)})`]);
        pairs(statTable, rows);
        statTable.dataset.ready = 'true';
        state.stat = st;
      } catch (e) {
        pairs(statTable, [['error', describeError(e, s.pageSize).text]]);
      }
      statButton.disabled = false;
    },
  });
  const shape = el('table', { id: 'estimate' });
  panel.replaceChildren(
    el('h2', { text: 'Overview' }),
    table,
    el('h2', { text: 'Shape' }),
    el('p', { class: 'note', id: 'estimate-note', text: 'Estimating from a few random root-to-leaf descents…' }),
    shape,
    el('h2', { text: 'Statistics' }),
    statButton,
    statTable,
  );
  estimate(shape, s);
}

/** The tree's shape from sampled descents: a few pages, whatever the file's size. */
async function estimate(table, s) {
  const note = $('estimate-note');
  try {
    // 16 descents: a few dozen pages (about half a MiB of a 1M-key store
    // by URL, with its 16 KiB chunks), so the overview stays cheap however
    // large the file; Analyze counts exactly.
    const e = await call('estimate', [{ samples: 16 }]);
    state.estimate = e;
    note.textContent = `Depth, entries and the root's fan-out are exact; the rest is estimated from ${fmt(e.samples)} descents reaching ${fmt(e.leavesSampled)} leaves (${fmt(e.pagesRead)} pages read). "Analyze" below counts exactly.`;
    const keys = ['depth', 'entries', 'rootFanout', 'leafPages', 'branchPages', 'leafFill', 'avgKeyLen', 'avgInlineValueLen', 'largeShare', 'avgLargeValueLen', 'largeValues', 'largeValueBytes'];
    pairs(table, keys.map((k) => statRow(k, e[k])));
    table.dataset.ready = 'true';
  } catch (err) {
    note.textContent = '';
    pairs(table, [['error', describeError(err, s.pageSize).text]]);
  }
}

async function bitableOverview(panel, s) {
  const table = el('table', { id: 'overview' });
  pairs(table, summaryRows(s));
  panel.replaceChildren(el('h2', { text: 'Overview' }), table);
  try {
    const st = await call('bitableStats');
    state.bitableStats = st;
    const rows = Object.entries(st)
      .filter(([k]) => k !== 'levelPages')
      .map(([k, v]) => statRow(k, v));
    const statTable = el('table', { id: 'stat' });
    pairs(statTable, rows);
    const levels = st.levelPages.map((n, i) => ({ name: i === 0 ? 'leaves (level 0)' : `level ${i}`, value: n }));
    panel.append(el('h2', { text: 'Levels' }), bars(levels, { label: 'Pages per level', head: ['level', 'pages'], plot: 'levels' }), el('h2', { text: 'Statistics' }), statTable);
  } catch (e) {
    panel.append(el('p', { class: 'error', role: 'alert', text: describeError(e, s.pageSize).text }));
  }
}

/** Rank and select of a bitable; a selected key opens in the key browser. */
function rankSelect(panel, jump) {
  const key = el('input', { type: 'text', id: 'rank-key', placeholder: 'text, or hex:00ff…', size: 24 });
  const n = el('input', { type: 'number', id: 'select-n', min: 0, step: 1, value: 0 });
  const out = el('table', { id: 'rank-out' });
  const run = async (fn) => {
    try {
      pairs(out, await fn());
    } catch (e) {
      pairs(out, [['error', describeError(e).text]]);
    }
    out.dispatchEvent(new Event('answered', { bubbles: true }));
  };
  panel.replaceChildren(
    el('h2', { text: 'Rank and select' }),
    el('p', { class: 'note', text: 'rank(key): how many keys sort before it. select(n): the key of rank n. Both read one path down the table.' }),
    el('form', { class: 'toolbar', onsubmit: (ev) => (ev.preventDefault(), run(async () => [['key', key.value], ['rank', fmt(await call('rank', [parseKey(key.value)]))]])) },
      el('label', {}, 'Key ', key), el('button', { type: 'submit', text: 'Rank' })),
    el('form', {
      class: 'toolbar',
      onsubmit: (ev) => {
        ev.preventDefault();
        run(async () => {
          const r = await call('select', [Number(n.value)]);
          if (!r) return [['select', `no key of rank ${fmt(Number(n.value))}`]];
          return [['rank', fmt(r.rank)], ['key', showKey(r.key)], ['value bytes', fmt(r.length)], ['', el('button', { type: 'button', text: 'Show in Keys', onclick: () => jump(r.key) })]];
        });
      },
    }, el('label', {}, 'Rank ', n), el('button', { type: 'submit', text: 'Select' })),
    out,
  );
}

function build(s) {
  const tabs = [];
  const fileName = s.name.split('/').pop();
  if (s.kind === 'tree') {
    tabs.push({ id: 'overview', label: 'Overview', render: (p) => treeOverview(p, s) });
    if (s.objects) tabs.push({ id: 'objects', label: 'Objects', render: (p) => new ObjectsView(p, inspector, s) });
    tabs.push({ id: 'keys', label: s.objects ? 'Index keys' : 'Keys', render: (p) => new KeyBrowser(p, call, { fileName, pageSize: s.pageSize }).first() });
    tabs.push({ id: 'check', label: 'Check', render: (p) => new CheckView(p, inspector, s) });
  } else if (s.kind === 'bitable') {
    let browser = null;
    let pending = null;
    let made;
    // select() can jump to a key before the Keys tab was ever shown.
    const jump = (key) => {
      pending = key;
      made.find((m) => m.tab.id === 'tab-keys').show();
      if (browser && pending) browser.goTo(pending);
      pending = null;
    };
    const renderKeys = (p) => {
      browser = new KeyBrowser(p, call, { ranked: true, fileName, pageSize: s.pageSize });
      if (pending) browser.goTo(pending);
      else browser.first();
      pending = null;
    };
    tabs.push({ id: 'overview', label: 'Overview', render: (p) => bitableOverview(p, s) });
    tabs.push({ id: 'keys', label: 'Keys', render: renderKeys });
    tabs.push({ id: 'rank', label: 'Rank and select', render: (p) => rankSelect(p, jump) });
    tabs.push({ id: 'check', label: 'Check', render: (p) => new CheckView(p, inspector, s) });
    made = makeTabs(tabs);
    return;
  } else {
    tabs.push({ id: 'objects', label: 'Objects', render: (p) => new ObjectsView(p, inspector, s) });
  }
  makeTabs(tabs);
}

/** Opens `source` ({ file } | { files, name } | { url }) and shows it. */
async function open(source, label) {
  $('error').hidden = true;
  $('main').hidden = true;
  delete document.body.dataset.state;
  delete document.body.dataset.code;
  state.summary = null;
  status(`Opening ${label}…`);
  let s;
  try {
    s = await inspector.open(source);
  } catch (e) {
    showError(e, label);
    return;
  }
  state.summary = s;
  inspector.onRead(state.read);
  document.title = `${s.name.split('/').pop()} – bale inspector`;
  status(`${label}: ${KIND_NAMES[s.kind]}${s.count !== undefined ? ` of ${fmt(s.count)} entr${s.count === 1 ? 'y' : 'ies'}` : ''}, ${bytes(s.fileBytes)}${s.filesFound ? ' found so far' : ''}.`, 'ready');
  $('main').hidden = false;
  build(s);
  document.body.dataset.kind = s.kind;
  document.body.dataset.state = 'ready';
}

/** The files under a dropped folder, with their paths, as a Map for fromFiles. */
async function folderFiles(entry) {
  const files = new Map();
  async function walk(dir, prefix) {
    const reader = dir.createReader();
    for (;;) {
      const batch = await new Promise((ok, fail) => reader.readEntries(ok, fail));
      if (batch.length === 0) break;
      for (const e of batch) {
        const path = `${prefix}/${e.name}`;
        if (e.isDirectory) await walk(e, path);
        else files.set(path, await new Promise((ok, fail) => e.file(ok, fail)));
      }
    }
  }
  await walk(entry, entry.name);
  return files;
}

$('file').addEventListener('change', () => {
  const f = $('file').files[0];
  if (f) open({ file: f }, f.name);
});
$('folder').addEventListener('change', () => {
  const files = $('folder').files;
  if (files.length) {
    const name = files[0].webkitRelativePath.split('/')[0];
    open({ files, name }, name);
  }
});
$('url-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const url = new URL($('url').value, location.href).href;
  history.replaceState(null, '', `?url=${encodeURIComponent(url)}`);
  open({ url }, url);
});
$('theme').addEventListener('click', () => {
  const dark = $('theme').getAttribute('aria-pressed') !== 'true';
  $('theme').setAttribute('aria-pressed', String(dark));
  document.documentElement.dataset.theme = dark ? 'dark' : 'light';
});

// Drag and drop: a file, or a folder (an object store).
let dragDepth = 0;
document.addEventListener('dragenter', (ev) => {
  ev.preventDefault();
  dragDepth++;
  $('drop').hidden = false;
});
document.addEventListener('dragleave', () => {
  if (--dragDepth <= 0) $('drop').hidden = true;
});
document.addEventListener('dragover', (ev) => ev.preventDefault());
document.addEventListener('drop', async (ev) => {
  ev.preventDefault();
  dragDepth = 0;
  $('drop').hidden = true;
  const item = [...(ev.dataTransfer?.items ?? [])].find((i) => i.kind === 'file');
  const entry = item?.webkitGetAsEntry?.();
  if (entry?.isDirectory) {
    open({ files: await folderFiles(entry), name: entry.name }, entry.name);
    return;
  }
  const f = ev.dataTransfer?.files?.[0];
  if (f) open({ file: f }, f.name);
});

const fromAddress = new URLSearchParams(location.search).get('url');
if (fromAddress) {
  const url = new URL(fromAddress, location.href).href;
  $('url').value = url;
  open({ url }, url);
}
