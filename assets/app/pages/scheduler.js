// /scheduler (admin) — background jobs with last/next run and result; run now.

import { get, post } from '../api.js';
import { badge, busy, button, failure, fmtAgo, h, loading, mount, pageHeader, table, toast } from '../ui.js';

const RUNNABLE = ['auto_backup', 'auto_cleanup', 'agent_heartbeat'];
const REFRESH_MS = 10000;

const msAgo = (ms) => (ms ? fmtAgo(Math.floor(ms / 1000)) : 'never');
function msIn(ms) {
  if (!ms) return '—';
  const d = Math.round((ms - Date.now()) / 1000);
  if (d <= 0) return 'due now';
  if (d < 60) return `in ${d}s`;
  if (d < 3600) return `in ${Math.round(d / 60)}m`;
  return `in ${Math.round(d / 3600)}h`;
}

export default {
  title: 'Scheduler',
  render(root) {
    const body = h('div', {}, loading());
    root.append(pageHeader('Scheduler', 'Maintenance jobs that run inside OpsDeck'), body);
    let timer = null;

    async function load() {
      clearTimeout(timer);
      try {
        const r = await get('/scheduler');
        mount(
          body,
          table(
            [
              { label: 'Job', render: (t) => h('div', {}, h('strong', {}, t.name), h('div', { class: 'muted small mono' }, t.id)) },
              { label: 'Enabled', render: (t) => badge(t.enabled ? 'enabled' : 'disabled') },
              { label: 'Last run', render: (t) => (t.running ? badge('running') : msAgo(t.lastRun)) },
              { label: 'Next run', render: (t) => (t.enabled ? msIn(t.nextRun) : '—') },
              { label: 'Last result', render: (t) => (t.lastResult ? h('span', {}, badge(t.lastResult.ok ? 'ok' : 'failed'), ' ', t.lastResult.message) : '—') },
              {
                label: 'Actions',
                render: (t) =>
                  RUNNABLE.includes(t.id)
                    ? button('Run now', (ev) => busy(ev.currentTarget, async () => {
                        const res = await post('/scheduler', { task_id: t.id });
                        toast(res.message || (res.ok ? 'Done' : 'Failed'), res.ok ? 'success' : 'error');
                        await load();
                      }, 'Running…'), { small: true, disabled: t.running })
                    : h('span', { class: 'muted small' }, 'automatic'),
              },
            ],
            r.tasks,
            { empty: 'No scheduled jobs.' },
          ),
        );
        timer = setTimeout(load, REFRESH_MS);
      } catch (e) {
        mount(body, failure(e, 'Scheduler'));
      }
    }
    load();
    return () => clearTimeout(timer);
  },
};
