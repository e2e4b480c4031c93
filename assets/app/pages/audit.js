// /audit (admin) — the audit trail with filters and paging.

import { get, query } from '../api.js';
import { button, debounce, failure, fmtTime, h, input, loading, mount, pageHeader, table } from '../ui.js';

const PAGE = 50;

function toSecs(dateStr, endOfDay) {
  if (!dateStr) return '';
  const d = new Date(`${dateStr}T${endOfDay ? '23:59:59' : '00:00:00'}`);
  return Number.isNaN(d.getTime()) ? '' : Math.floor(d.getTime() / 1000);
}

export default {
  title: 'Audit log',
  render(root) {
    let offset = 0;
    const action = input('action', '', { placeholder: 'Action, e.g. login', 'aria-label': 'Action' });
    const actor = input('actor', '', { placeholder: 'Actor', 'aria-label': 'Actor' });
    const since = input('since', '', { type: 'date', 'aria-label': 'Since' });
    const until = input('until', '', { type: 'date', 'aria-label': 'Until' });
    const body = h('div', {}, loading());
    const pager = h('div', { class: 'pager' });
    root.append(pageHeader('Audit log', 'Who did what, and from where'), h('div', { class: 'toolbar' }, action, actor, h('label', { class: 'inline' }, 'From ', since), h('label', { class: 'inline' }, 'to ', until)), body, pager);

    async function load() {
      try {
        const r = await get(`/audit${query({ action: action.value.trim(), actor: actor.value.trim(), since: toSecs(since.value, false), until: toSecs(until.value, true), limit: PAGE, offset })}`);
        mount(
          body,
          table(
            [
              { label: 'When', render: (e) => fmtTime(e.created_at) },
              { label: 'Action', render: (e) => h('span', { class: 'mono' }, e.action) },
              { label: 'Actor', render: (e) => e.actor },
              { label: 'IP', render: (e) => e.ip_address || '—' },
              { label: 'Detail', render: (e) => h('code', { class: 'detail-json' }, JSON.stringify(e.detail)) },
            ],
            r.events,
            { empty: 'No audit events match.' },
          ),
        );
        mount(
          pager,
          h('span', { class: 'muted' }, `${r.total ? offset + 1 : 0}–${offset + r.events.length} of ${r.total}`),
          button('Previous', () => { offset = Math.max(0, offset - PAGE); load(); }, { small: true, disabled: offset === 0 }),
          button('Next', () => { offset += PAGE; load(); }, { small: true, disabled: offset + PAGE >= r.total }),
        );
      } catch (e) {
        mount(body, failure(e, 'Audit log'));
        mount(pager);
      }
    }
    const reload = debounce(() => { offset = 0; load(); }, 300);
    for (const el of [action, actor]) el.addEventListener('input', reload);
    for (const el of [since, until]) el.addEventListener('change', reload);
    load();
  },
};
