// /sessions — gateway, local and token-derived sessions: source, age, tokens, model; pause/resume/kill.

import { get, post, query } from '../api.js';
import { can } from '../session.js';
import { badge, busy, button, confirmDialog, failure, h, input, loading, mount, pageHeader, table, toast } from '../ui.js';

const REFRESH_MS = 30000;

function status(s) {
  if (s.status) return s.status;
  return s.active ? 'active' : 'idle';
}

export default {
  title: 'Sessions',
  render(root) {
    const operator = can('operator');
    const body = h('div', {}, loading());
    const agent = input('agent', '', { type: 'search', placeholder: 'Filter by agent', 'aria-label': 'Agent' });
    const refresh = button('Refresh', () => load());
    root.append(pageHeader('Sessions', 'Agent sessions from gateways, local tools and token reports', refresh), h('div', { class: 'toolbar' }, agent), body);
    let timer = null;

    const control = async (btn, s, action) => {
      if (action === 'kill' && !(await confirmDialog(`Kill session ${s.id}? It cannot be resumed.`, 'Kill session'))) return;
      await busy(btn, async () => {
        await post(`/sessions/${encodeURIComponent(s.id)}/control`, { action });
        toast(`Session ${action === 'kill' ? 'killed' : action === 'pause' ? 'paused' : 'resumed'}`, 'success');
        await load();
      });
    };

    async function load() {
      clearTimeout(timer);
      try {
        const r = await get(`/sessions${query({ agent: agent.value.trim(), limit: 200 })}`);
        const cols = [
          { label: 'Session', render: (s) => h('div', {}, h('strong', {}, s.agent || '—'), h('div', { class: 'muted small mono' }, s.key || s.id)) },
          { label: 'Source', render: (s) => badge(s.source || 'gateway') },
          { label: 'Kind', render: (s) => s.kind || '—' },
          { label: 'Model', render: (s) => s.model || '—' },
          { label: 'Age', render: (s) => s.age || '—' },
          { label: 'Tokens', render: (s) => h('span', { class: 'mono' }, s.tokens || '—') },
          { label: 'Status', render: (s) => badge(status(s)) },
        ];
        if (operator) {
          cols.push({
            label: 'Actions',
            render: (s) => {
              const st = status(s);
              return h(
                'div',
                { class: 'row' },
                st === 'paused'
                  ? button('Resume', (ev) => control(ev.currentTarget, s, 'resume'), { small: true })
                  : button('Pause', (ev) => control(ev.currentTarget, s, 'pause'), { small: true, disabled: st === 'completed' }),
                button('Kill', (ev) => control(ev.currentTarget, s, 'kill'), { small: true, kind: 'danger-ghost', disabled: st === 'completed' }),
              );
            },
          });
        }
        mount(body, table(cols, r.sessions, { empty: 'No sessions found.' }));
        timer = setTimeout(load, REFRESH_MS);
      } catch (e) {
        mount(body, failure(e, 'Sessions'));
      }
    }

    agent.addEventListener('change', load);
    load();
    return () => clearTimeout(timer);
  },
};
