// Shared DOM helpers and components. Text always goes in as text nodes: no HTML from data, ever.

import { ApiError, isMissingApi } from './api.js';

/** h('div', {class: 'x', onclick: fn, attrs...}, ...children) */
export function h(tag, props, ...children) {
  const el = tag.startsWith('svg:')
    ? document.createElementNS('http://www.w3.org/2000/svg', tag.slice(4))
    : document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on') && typeof value === 'function') {
      el.addEventListener(key.slice(2), value);
    } else if (key === 'class') {
      el.setAttribute('class', Array.isArray(value) ? value.filter(Boolean).join(' ') : value);
    } else if (key === 'dataset') {
      Object.assign(el.dataset, value);
    } else if (key === 'value' && 'value' in el) {
      el.value = value;
    } else if (key === 'checked' || key === 'selected' || key === 'disabled' || key === 'hidden') {
      el[key] = Boolean(value);
    } else {
      el.setAttribute(key, value === true ? '' : String(value));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

export function mount(el, ...children) {
  clear(el);
  append(el, children);
  return el;
}

// ---- formatting -------------------------------------------------------------------------------

export function fmtTime(secs) {
  if (secs === null || secs === undefined) return '—';
  return new Date(secs * 1000).toLocaleString();
}

export function fmtAgo(secs) {
  if (secs === null || secs === undefined) return 'never';
  const d = Math.round(Date.now() / 1000 - secs);
  if (d < 5) return 'just now';
  if (d < 60) return `${d}s ago`;
  if (d < 3600) return `${Math.floor(d / 60)}m ago`;
  if (d < 86400) return `${Math.floor(d / 3600)}h ago`;
  return `${Math.floor(d / 86400)}d ago`;
}

export function fmtNum(n) {
  if (n === null || n === undefined || Number.isNaN(n)) return '—';
  if (Math.abs(n) >= 1e6) return `${(n / 1e6).toFixed(1)}M`;
  if (Math.abs(n) >= 1e4) return `${(n / 1e3).toFixed(1)}k`;
  return Number(n).toLocaleString();
}

export function fmtCost(n) {
  if (n === null || n === undefined || Number.isNaN(n)) return '—';
  return `$${Number(n).toFixed(n < 1 && n > 0 ? 4 : 2)}`;
}

export function fmtBytes(n) {
  if (!n && n !== 0) return '—';
  const units = ['B', 'KB', 'MB', 'GB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i += 1;
  }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
}

export const label = (s) => String(s || '').replace(/_/g, ' ');

// ---- small components -------------------------------------------------------------------------

export function badge(value, extra) {
  return h('span', { class: ['badge', `badge-${String(value).replace(/[^a-z0-9_-]/gi, '')}`, extra] }, label(value));
}

export function pageHeader(title, subtitle, ...actions) {
  return h(
    'header',
    { class: 'page-header' },
    h('div', { class: 'page-title' }, h('h1', {}, title), subtitle ? h('p', { class: 'muted' }, subtitle) : null),
    h('div', { class: 'page-actions' }, ...actions),
  );
}

export function button(text, onclick, opts = {}) {
  return h(
    'button',
    {
      type: opts.type || 'button',
      class: ['btn', opts.kind ? `btn-${opts.kind}` : null, opts.small ? 'btn-sm' : null],
      onclick,
      disabled: opts.disabled,
      title: opts.title,
      'aria-label': opts.ariaLabel,
      dataset: opts.dataset,
    },
    text,
  );
}

/** Runs an async action with the button disabled and a busy label; errors become toasts. */
export async function busy(btn, fn, busyText) {
  const text = btn.textContent;
  btn.disabled = true;
  btn.classList.add('is-busy');
  if (busyText) btn.textContent = busyText;
  try {
    return await fn();
  } catch (e) {
    toast(errorText(e), 'error');
    return undefined;
  } finally {
    btn.disabled = false;
    btn.classList.remove('is-busy');
    btn.textContent = text;
  }
}

export function errorText(e) {
  if (e instanceof ApiError) return e.describe();
  return (e && e.message) || String(e);
}

export function empty(text, ...extra) {
  return h('div', { class: 'empty' }, h('p', {}, text), ...extra);
}

export function loading() {
  return h('div', { class: 'loading', role: 'status' }, h('span', { class: 'spinner' }), 'Loading…');
}

/** The message a page shows when its API is not on this server. */
export function notAvailable(what) {
  return h(
    'div',
    { class: 'notice notice-muted', role: 'status', dataset: { unavailable: 'true' } },
    h('strong', {}, `${what} is not available`),
    h('p', {}, 'This OpsDeck server does not provide this feature yet. The page will work once it does.'),
  );
}

export function errorBox(e) {
  return h('div', { class: 'notice notice-error', role: 'alert' }, errorText(e));
}

/** What a page shows when loading failed: "not available" for a missing API, else the error. */
export function failure(e, what) {
  return isMissingApi(e) ? notAvailable(what) : errorBox(e);
}

export function stat(title, value, sub, opts = {}) {
  return h(
    'div',
    { class: ['card', 'stat', opts.class], dataset: opts.dataset },
    h('div', { class: 'stat-label' }, title),
    h('div', { class: 'stat-value' }, value),
    sub ? h('div', { class: 'stat-sub' }, sub) : null,
  );
}

/** columns: [{label, render(row) → node|string, class}] */
export function table(columns, rows, opts = {}) {
  if (!rows.length) return empty(opts.empty || 'Nothing here yet.');
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      { class: 'table' },
      h('thead', {}, h('tr', {}, columns.map((c) => h('th', { class: c.class, scope: 'col' }, c.label)))),
      h(
        'tbody',
        {},
        rows.map((row) =>
          h(
            'tr',
            { dataset: opts.rowData ? opts.rowData(row) : undefined, class: opts.rowClass ? opts.rowClass(row) : undefined },
            columns.map((c) => h('td', { class: c.class, 'data-label': c.label }, c.render(row))),
          ),
        ),
      ),
    ),
  );
}

// ---- forms ------------------------------------------------------------------------------------

export function field(labelText, input, hint) {
  const id = input.id || `f-${Math.random().toString(36).slice(2, 9)}`;
  input.id = id;
  return h(
    'div',
    { class: 'field' },
    h('label', { for: id }, labelText),
    input,
    hint ? h('small', { class: 'muted' }, hint) : null,
  );
}

export function input(name, value, attrs = {}) {
  return h('input', { name, value: value ?? '', type: 'text', ...attrs });
}

export function textarea(name, value, attrs = {}) {
  const el = h('textarea', { name, rows: 4, ...attrs });
  el.value = value ?? '';
  return el;
}

export function select(name, options, value, attrs = {}) {
  return h(
    'select',
    { name, ...attrs },
    options.map((o) => {
      const [v, text] = Array.isArray(o) ? o : [o, label(o)];
      return h('option', { value: v, selected: String(v) === String(value ?? '') }, text);
    }),
  );
}

export function checkbox(name, checked, text) {
  return h('label', { class: 'check' }, h('input', { type: 'checkbox', name, checked }), ' ', text);
}

export function formError() {
  return h('div', { class: 'form-error', role: 'alert', hidden: true });
}

export function showFormError(box, e) {
  box.textContent = errorText(e);
  box.hidden = false;
}

// ---- dialogs and toasts -----------------------------------------------------------------------

/**
 * A modal <dialog>. `body` is a node; `actions` buttons go in the footer. Returns {dialog, close}.
 * onClose runs once when it closes, however that happens.
 */
export function openDialog({ title, body, actions = [], wide = false, onClose }) {
  const closeBtn = h('button', { type: 'button', class: 'icon-btn', 'aria-label': 'Close' }, '×');
  const dialog = h(
    'dialog',
    { class: ['dialog', wide ? 'dialog-wide' : null], 'aria-label': title },
    h('header', { class: 'dialog-header' }, h('h2', {}, title), closeBtn),
    h('div', { class: 'dialog-body' }, body),
    actions.length ? h('footer', { class: 'dialog-footer' }, actions) : null,
  );
  const close = () => {
    if (dialog.open) dialog.close();
  };
  closeBtn.addEventListener('click', close);
  dialog.addEventListener('close', () => {
    dialog.remove();
    if (onClose) onClose();
  });
  dialog.addEventListener('click', (ev) => {
    if (ev.target === dialog) close();
  });
  document.body.append(dialog);
  dialog.showModal();
  return { dialog, close };
}

export function confirmDialog(message, confirmText = 'Confirm', kind = 'danger') {
  return new Promise((resolve) => {
    let answer = false;
    const ok = button(confirmText, () => {
      answer = true;
      close();
    }, { kind });
    const cancel = button('Cancel', () => close());
    const { close } = openDialog({
      title: 'Please confirm',
      body: h('p', {}, message),
      actions: [cancel, ok],
      onClose: () => resolve(answer),
    });
    ok.focus();
  });
}

let toastBox = null;

export function toast(message, kind = 'info') {
  if (!toastBox || !toastBox.isConnected) {
    toastBox = h('div', { class: 'toasts', role: 'status', 'aria-live': 'polite' });
    document.body.append(toastBox);
  }
  const t = h('div', { class: ['toast', `toast-${kind}`] }, message);
  toastBox.append(t);
  setTimeout(() => t.remove(), kind === 'error' ? 8000 : 4000);
}

export async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const ta = h('textarea', { class: 'offscreen', readonly: true });
    ta.value = text;
    document.body.append(ta);
    ta.select();
    let ok = false;
    try {
      ok = document.execCommand('copy');
    } catch {
      ok = false;
    }
    ta.remove();
    return ok;
  }
}

/** A read-only value with a Copy button. */
export function copyField(value, labelText = 'Copy') {
  const code = h('code', { class: 'secret-value' }, value);
  const btn = button(labelText, async () => {
    const ok = await copyText(value);
    btn.textContent = ok ? 'Copied' : 'Select and copy';
    setTimeout(() => {
      btn.textContent = labelText;
    }, 2000);
  }, { small: true });
  return h('div', { class: 'copy-field' }, code, btn);
}

/** Calls fn at most once per `ms`, trailing. */
export function debounce(fn, ms = 200) {
  let t = null;
  return (...args) => {
    clearTimeout(t);
    t = setTimeout(() => fn(...args), ms);
  };
}

export function tabs(items, initial) {
  const bar = h('div', { class: 'tabs', role: 'tablist' });
  const panel = h('div', { class: 'tab-panel', role: 'tabpanel' });
  const select = (key) => {
    for (const b of bar.children) b.setAttribute('aria-selected', String(b.dataset.key === key));
    const item = items.find((i) => i.key === key);
    clear(panel);
    item.render(panel);
  };
  for (const item of items) {
    bar.append(h('button', { type: 'button', role: 'tab', class: 'tab', dataset: { key: item.key }, onclick: () => select(item.key) }, item.label));
  }
  select(initial || items[0].key);
  return h('div', { class: 'tabs-wrap' }, bar, panel);
}
