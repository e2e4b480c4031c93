// / — the fleet at a glance: agents and tasks by status, active sessions, today's cost, recent activity
// and alerts. Everything refreshes from the live stream.

import { get, isMissingApi } from '../api.js';
import { shareBar } from '../chart.js';
import { on } from '../sse.js';
import { can } from '../session.js';
import { badge, debounce, empty, fmtAgo, fmtCost, fmtNum, h, label, mount, pageHeader } from '../ui.js';

const AGENT_STATUSES = ['online', 'busy', 'idle', 'error', 'offline'];
const TASK_STATUSES = ['inbox', 'assigned', 'in_progress', 'quality_review', 'done'];

async function allTasks() {
  const out = [];
  for (let offset = 0; offset < 2000; offset += 200) {
    const r = await get(`/tasks?limit=200&offset=${offset}`);
    out.push(...r.tasks);
    if (out.length >= r.total || !r.tasks.length) break;
  }
  return out;
}

/** Resolves to {ok, value} | {ok:false, missing, error}: one card's failure never blanks the page. */
async function settle(promise) {
  try {
    return { ok: true, value: await promise };
  } catch (e) {
    return { ok: false, missing: isMissingApi(e), error: e };
  }
}

function unavailableStat(title) {
  return h('div', { class: 'card stat stat-na' }, h('div', { class: 'stat-label' }, title), h('div', { class: 'stat-value muted' }, '—'), h('div', { class: 'stat-sub' }, 'not available'));
}

export default {
  title: 'Overview',
  render(root) {
    const cards = h('section', { class: 'grid stats', 'aria-label': 'Summary' });
    const agentsCard = h('section', { class: 'card panel' });
    const tasksCard = h('section', { class: 'card panel' });
    const activityCard = h('section', { class: 'card panel' });
    const alertsCard = h('section', { class: 'card panel' });
    const activity = [];
    root.append(
      pageHeader('Overview', 'Your agent fleet right now'),
      cards,
      h('div', { class: 'grid two' }, agentsCard, tasksCard),
      h('div', { class: 'grid two' }, activityCard, alertsCard),
    );

    const renderActivity = () => {
      mount(
        activityCard,
        h('h2', {}, 'Recent activity'),
        activity.length
          ? h(
              'ul',
              { class: 'feed' },
              activity.slice(0, 12).map((a) =>
                h('li', {}, h('span', { class: 'feed-type' }, label(a.type)), h('span', { class: 'feed-text' }, a.text), h('time', { class: 'muted' }, fmtAgo(a.at))),
              ),
            )
          : empty('No activity yet. Changes appear here as they happen.'),
      );
    };

    const load = async () => {
      const [agents, tasks, sessions, tokens, alerts, notes] = await Promise.all([
        settle(get('/agents?limit=200')),
        settle(allTasks()),
        settle(get('/sessions?limit=200')),
        settle(get('/tokens?action=stats&timeframe=day')),
        settle(get('/alerts')),
        settle(get('/notifications?limit=8')),
      ]);

      const statCards = [];
      if (agents.ok) {
        const list = agents.value.agents;
        const active = list.filter((a) => ['online', 'busy', 'idle'].includes(a.status)).length;
        statCards.push(h('a', { href: '/agents', class: 'card stat stat-link', dataset: { stat: 'agents' } }, h('div', { class: 'stat-label' }, 'Agents'), h('div', { class: 'stat-value' }, String(agents.value.total)), h('div', { class: 'stat-sub' }, `${active} active`)));
        mount(
          agentsCard,
          h('div', { class: 'panel-head' }, h('h2', {}, 'Agents by status'), h('a', { href: '/agents' }, 'All agents →')),
          shareBar(AGENT_STATUSES.map((s) => ({ label: s, value: list.filter((a) => a.status === s).length, cls: `c-${s}` }))),
          list.length
            ? h(
                'ul',
                { class: 'mini-list' },
                list.slice(0, 6).map((a) => h('li', {}, h('span', { class: 'mini-name' }, a.name), badge(a.status), h('span', { class: 'muted' }, fmtAgo(a.last_seen)))),
              )
            : empty('No agents registered yet.'),
        );
      } else {
        statCards.push(unavailableStat('Agents'));
        mount(agentsCard, h('h2', {}, 'Agents by status'), empty('Agents could not be loaded.'));
      }
      if (tasks.ok) {
        const list = tasks.value;
        const open = list.filter((t) => t.status !== 'done').length;
        statCards.push(h('a', { href: '/tasks', class: 'card stat stat-link', dataset: { stat: 'tasks' } }, h('div', { class: 'stat-label' }, 'Open tasks'), h('div', { class: 'stat-value' }, String(open)), h('div', { class: 'stat-sub' }, `${list.length} in total`)));
        mount(
          tasksCard,
          h('div', { class: 'panel-head' }, h('h2', {}, 'Tasks by status'), h('a', { href: '/tasks' }, 'Board →')),
          shareBar(TASK_STATUSES.map((s) => ({ label: label(s), value: list.filter((t) => t.status === s).length, cls: `c-${s}` }))),
          h(
            'ul',
            { class: 'mini-list' },
            [...list].sort((a, b) => b.updated_at - a.updated_at).slice(0, 6).map((t) => h('li', {}, h('span', { class: 'mini-name' }, t.title), badge(t.status), h('span', { class: 'muted' }, fmtAgo(t.updated_at)))),
          ),
        );
        if (!activity.length) {
          for (const t of [...list].sort((a, b) => b.updated_at - a.updated_at).slice(0, 6)) {
            activity.push({ type: 'task', text: `${t.title} — ${label(t.status)}`, at: t.updated_at });
          }
        }
      } else {
        statCards.push(unavailableStat('Open tasks'));
        mount(tasksCard, h('h2', {}, 'Tasks by status'), empty('Tasks could not be loaded.'));
      }
      if (sessions.ok) {
        const active = sessions.value.sessions.filter((s) => s.active).length;
        statCards.push(h('a', { href: '/sessions', class: 'card stat stat-link', dataset: { stat: 'sessions' } }, h('div', { class: 'stat-label' }, 'Active sessions'), h('div', { class: 'stat-value' }, String(active)), h('div', { class: 'stat-sub' }, `${sessions.value.sessions.length} known`)));
      } else statCards.push(unavailableStat('Active sessions'));
      if (tokens.ok) {
        const s = tokens.value.summary || {};
        statCards.push(h('a', { href: '/tokens', class: 'card stat stat-link', dataset: { stat: 'cost' } }, h('div', { class: 'stat-label' }, 'Token cost, 24 h'), h('div', { class: 'stat-value' }, fmtCost(s.totalCost || 0)), h('div', { class: 'stat-sub' }, `${fmtNum(s.totalTokens || 0)} tokens`)));
      } else statCards.push(unavailableStat('Token cost, 24 h'));
      mount(cards, statCards);

      const alertItems = [];
      if (alerts.ok) {
        for (const r of alerts.value.rules.filter((r) => r.last_triggered_at).sort((a, b) => b.last_triggered_at - a.last_triggered_at).slice(0, 5)) {
          alertItems.push(h('li', {}, h('span', { class: 'feed-type alert' }, 'rule'), h('span', { class: 'feed-text' }, `${r.name} triggered (${r.trigger_count}×)`), h('time', { class: 'muted' }, fmtAgo(r.last_triggered_at))));
        }
      }
      if (notes.ok) {
        for (const n of notes.value.notifications.slice(0, 6)) {
          alertItems.push(h('li', { class: n.read_at ? '' : 'unread' }, h('span', { class: ['feed-type', n.type === 'alert' ? 'alert' : null] }, label(n.type)), h('span', { class: 'feed-text' }, n.title), h('time', { class: 'muted' }, fmtAgo(n.created_at))));
        }
      }
      mount(
        alertsCard,
        h('div', { class: 'panel-head' }, h('h2', {}, 'Alerts and notifications'), h('a', { href: can('viewer') && alerts.ok ? '/alerts' : '/notifications' }, 'Details →')),
        alertItems.length ? h('ul', { class: 'feed' }, alertItems) : empty(alerts.ok ? 'All quiet: nothing triggered.' : 'Nothing to report. Alert rules are not available on this server.'),
      );
      renderActivity();
    };

    renderActivity();
    load();
    const reload = debounce(load, 300);
    const offs = [
      on(['task.*', 'agent.*', 'notification.created', 'alert.triggered'], reload),
      on(['activity.created'], (msg) => {
        if (msg.type !== 'activity.created') return;
        const a = msg.data || {};
        activity.unshift({ type: a.type || 'activity', text: a.description || label(a.type), at: a.created_at || Math.floor(Date.now() / 1000) });
        activity.length = Math.min(activity.length, 30);
        renderActivity();
      }),
    ];
    return () => offs.forEach((off) => off());
  },
};
