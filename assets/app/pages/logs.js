// /logs — filters (level, source, session), search, and a live tail.

import { get, query } from '../api.js';
import { on } from '../sse.js';
import { button, clear, debounce, empty, failure, h, input, loading, mount, pageHeader, select } from '../ui.js';

const LEVELS = ['', 'error', 'warn', 'info', 'debug'];
const TAIL_MS = 3000;
const MAX_ROWS = 500;

function row(l) {
  return h(
    'li',
    { class: ['log', `log-${l.level}`] },
    h('time', { class: 'mono' }, new Date(l.timestamp).toLocaleString()),
    h('span', { class: ['lvl', `lvl-${l.level}`] }, l.level),
    h('span', { class: 'src' }, l.source || ''),
    h('span', { class: 'msg' }, l.message, l.session ? h('span', { class: 'muted' }, ` [${l.session}]`) : null),
  );
}

export default {
  title: 'Logs',
  render(root) {
    let logs = [];
    let tailing = false;
    let timer = null;
    const level = select('level', LEVELS.map((l) => [l, l || 'All levels']), '', { 'aria-label': 'Level' });
    const source = select('source', [['', 'All sources']], '', { 'aria-label': 'Source' });
    const session = input('session', '', { placeholder: 'Session', 'aria-label': 'Session' });
    const search = input('search', '', { type: 'search', placeholder: 'Search messages', 'aria-label': 'Search' });
    const list = h('div', {}, loading());
    const tailBtn = button('Live tail', () => setTail(!tailing), { ariaLabel: 'Toggle live tail' });
    root.append(pageHeader('Logs', 'Service and gateway logs', tailBtn), h('div', { class: 'toolbar' }, level, source, session, search), list);

    const draw = () => {
      if (!logs.length) return mount(list, empty('No log entries match.'));
      mount(list, h('ul', { class: 'log-list mono' }, logs.map(row)));
    };

    const params = () => ({ level: level.value, source: source.value, session: session.value.trim(), search: search.value.trim(), limit: 200 });

    async function load() {
      try {
        const r = await get(`/logs${query({ action: 'recent', ...params() })}`);
        logs = [...r.logs].sort((a, b) => b.timestamp - a.timestamp);
        draw();
        return true;
      } catch (e) {
        mount(list, failure(e, 'Logs'));
        tailBtn.disabled = true;
        return false;
      }
    }

    async function loadSources() {
      try {
        const r = await get('/logs?action=sources');
        const cur = source.value;
        mount(source, h('option', { value: '' }, 'All sources'), r.sources.map((s) => h('option', { value: s, selected: s === cur }, s)));
      } catch {
        // The list itself reports the problem.
      }
    }

    async function tail() {
      clearTimeout(timer);
      if (!tailing) return;
      const since = logs.length ? Math.max(...logs.map((l) => l.timestamp)) : Date.now() - 60000;
      try {
        const r = await get(`/logs${query({ action: 'tail', since, source: source.value, limit: 100 })}`);
        const seen = new Set(logs.map((l) => l.id));
        const fresh = r.logs.filter((l) => !seen.has(l.id) && matches(l));
        if (fresh.length) {
          logs = [...fresh, ...logs].sort((a, b) => b.timestamp - a.timestamp).slice(0, MAX_ROWS);
          draw();
        }
      } catch {
        // Keep tailing; a transient error shows nothing new.
      }
      timer = setTimeout(tail, TAIL_MS);
    }

    function matches(l) {
      const p = params();
      return (!p.level || l.level === p.level) && (!p.session || l.session === p.session) && (!p.search || String(l.message).toLowerCase().includes(p.search.toLowerCase()));
    }

    function setTail(on_) {
      tailing = on_;
      tailBtn.setAttribute('aria-pressed', String(tailing));
      tailBtn.textContent = tailing ? 'Stop tail' : 'Live tail';
      tailBtn.classList.toggle('btn-primary', tailing);
      if (tailing) tail();
      else clearTimeout(timer);
    }

    const reload = debounce(load, 250);
    for (const el of [level, source]) el.addEventListener('change', reload);
    for (const el of [session, search]) el.addEventListener('input', reload);
    load().then((ok) => ok && loadSources());
    const off = on(['log.added'], (msg) => {
      if (!tailing || msg.type !== 'log.added' || !msg.data) return;
      const l = msg.data.entry || msg.data;
      if (!l.id || logs.some((x) => x.id === l.id) || !matches(l)) return;
      logs = [l, ...logs].slice(0, MAX_ROWS);
      draw();
    });
    return () => {
      clearTimeout(timer);
      off();
      clear(list);
    };
  },
};
