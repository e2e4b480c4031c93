// /agents — cards with status and last seen; a detail dialog with soul, memory, messages, tasks and
// token cost; create, wake, send a message, sync from the gateway.

import { del, get, isMissingApi, post, put, query } from '../api.js';
import { on } from '../sse.js';
import { can, username } from '../session.js';
import {
  badge, busy, button, confirmDialog, debounce, empty, errorText, failure, field, fmtAgo, fmtCost, fmtNum, fmtTime,
  formError, h, input, label, loading, mount, openDialog, pageHeader, select, showFormError, table, tabs, textarea, toast,
} from '../ui.js';

const STATUSES = ['online', 'busy', 'idle', 'error', 'offline'];
const TEMPLATES = ['', 'developer', 'analyst', 'qa', 'researcher'];

function createDialog(onDone) {
  const form = h(
    'form',
    { class: 'form', id: 'agent-form' },
    field('Name', input('name', '', { required: true, maxlength: 100 })),
    h('div', { class: 'form-row' }, field('Role', input('role', '', { required: true, placeholder: 'developer, analyst, qa…' })), field('Template', select('template', TEMPLATES.map((t) => [t, t || 'none']), ''))),
    h('div', { class: 'form-row' }, field('Status', select('status', STATUSES, 'offline')), field('Session key', input('session_key', ''))),
    field('Soul', textarea('soul_content', '', { rows: 4, placeholder: 'Personality and instructions' })),
  );
  const err = formError();
  form.append(err);
  const save = button('Create agent', null, { kind: 'primary', type: 'submit' });
  save.setAttribute('form', 'agent-form');
  const { close } = openDialog({ title: 'New agent', body: form, actions: [button('Cancel', () => close()), save] });
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const v = (n) => form.elements[n].value.trim();
    const body = { name: v('name'), role: v('role'), status: v('status') };
    if (v('template')) body.template = v('template');
    if (v('session_key')) body.session_key = v('session_key');
    if (v('soul_content')) body.soul_content = v('soul_content');
    save.disabled = true;
    try {
      const r = await post('/agents', body);
      toast(`Agent ${r.agent.name} created`, 'success');
      close();
      onDone();
    } catch (e) {
      showFormError(err, e);
    } finally {
      save.disabled = false;
    }
  });
  form.elements.name.focus();
}

function wakeDialog(agent, onDone) {
  const reason = input('reason', '', { placeholder: 'Why wake it? (optional)' });
  const form = h('form', { class: 'form', id: 'wake-form' }, field('Reason', reason));
  const err = formError();
  form.append(err);
  const go = button('Wake agent', null, { kind: 'primary', type: 'submit' });
  go.setAttribute('form', 'wake-form');
  const { close } = openDialog({ title: `Wake ${agent.name}`, body: form, actions: [button('Cancel', () => close()), go] });
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    go.disabled = true;
    try {
      const body = reason.value.trim() ? { reason: reason.value.trim() } : {};
      await post(`/agents/${agent.id}/wake`, body);
      toast(`Wake sent to ${agent.name}`, 'success');
      close();
      onDone();
    } catch (e) {
      showFormError(err, e);
    } finally {
      go.disabled = false;
    }
  });
  reason.focus();
}

function overviewTab(agent, operator, refresh) {
  return (panel) => {
    const form = h(
      'form',
      { class: 'form' },
      h('div', { class: 'form-row' }, field('Role', input('role', agent.role, { disabled: !operator })), field('Status', select('status', STATUSES, agent.status, { disabled: !operator }))),
      field('Session key', input('session_key', agent.session_key || '', { disabled: !operator })),
      field('Config', textarea('config', JSON.stringify(agent.config || {}, null, 2), { rows: 6, class: 'mono', disabled: !operator })),
    );
    const err = formError();
    form.append(err);
    if (operator) {
      const save = button('Save', null, { kind: 'primary', type: 'submit' });
      form.append(h('div', { class: 'row' }, save));
      form.addEventListener('submit', async (ev) => {
        ev.preventDefault();
        err.hidden = true;
        let config;
        try {
          config = JSON.parse(form.elements.config.value || '{}');
        } catch {
          return showFormError(err, new Error('Config must be valid JSON.'));
        }
        await busy(save, async () => {
          await put(`/agents/${agent.id}`, { role: form.elements.role.value.trim(), status: form.elements.status.value, session_key: form.elements.session_key.value.trim(), config });
          toast('Agent saved', 'success');
          refresh();
        });
      });
    }
    panel.append(
      h(
        'div',
        { class: 'detail-grid' },
        h('div', {}, h('div', { class: 'muted small' }, 'Last seen'), fmtAgo(agent.last_seen)),
        h('div', {}, h('div', { class: 'muted small' }, 'Last activity'), agent.last_activity || '—'),
        h('div', {}, h('div', { class: 'muted small' }, 'Tasks'), `${agent.taskStats.total} total · ${agent.taskStats.in_progress} in progress · ${agent.taskStats.completed} done`),
        h('div', {}, h('div', { class: 'muted small' }, 'Created'), fmtTime(agent.created_at)),
      ),
      form,
    );
  };
}

function soulTab(agent, operator) {
  return async (panel) => {
    panel.append(loading());
    let soul;
    try {
      soul = await get(`/agents/${agent.id}/soul`);
    } catch (e) {
      mount(panel, failure(e, 'Soul'));
      return;
    }
    const text = textarea('soul', soul.soul_content || '', { rows: 12, class: 'mono', disabled: !operator, 'aria-label': 'Soul' });
    const save = operator
      ? button('Save soul', async () => {
          await busy(save, async () => {
            const r = await put(`/agents/${agent.id}/soul`, { soul_content: text.value });
            toast(r.updated.workspace ? 'Soul saved (database and workspace)' : 'Soul saved', 'success');
          });
        }, { kind: 'primary' })
      : null;
    mount(panel, h('p', { class: 'muted small' }, `Source: ${soul.source}`), text, h('div', { class: 'row' }, save));
  };
}

function memoryTab(agent, operator) {
  return async (panel) => {
    panel.append(loading());
    let mem;
    try {
      mem = await get(`/agents/${agent.id}/memory`);
    } catch (e) {
      mount(panel, failure(e, 'Memory'));
      return;
    }
    const text = textarea('memory', JSON.stringify(mem.memory ?? {}, null, 2), { rows: 12, class: 'mono', disabled: !operator, 'aria-label': 'Memory (JSON)' });
    const err = formError();
    const save = operator
      ? button('Save memory', async () => {
          err.hidden = true;
          let memory;
          try {
            memory = JSON.parse(text.value);
          } catch (e) {
            return showFormError(err, new Error(`Memory must be valid JSON: ${e.message}`));
          }
          if (!memory || typeof memory !== 'object' || Array.isArray(memory)) return showFormError(err, new Error('Memory must be a JSON object.'));
          await busy(save, async () => {
            const r = await put(`/agents/${agent.id}/memory`, { memory });
            text.value = JSON.stringify(r.memory, null, 2);
            toast('Memory saved', 'success');
          });
        }, { kind: 'primary' })
      : null;
    mount(panel, text, err, h('div', { class: 'row' }, save));
  };
}

function messagesTab(agent, operator) {
  return async (panel) => {
    const list = h('div', {}, loading());
    const load = async () => {
      try {
        const r = await get(`/agents/comms${query({ agent: agent.name, limit: 50 })}`);
        mount(
          list,
          r.messages.length
            ? h('ul', { class: 'messages' }, r.messages.map((m) => h('li', { class: m.from_agent === agent.name ? 'out' : 'in' }, h('div', { class: 'msg-head' }, h('strong', {}, m.from_agent), ' → ', m.to_agent, ' ', badge(m.type), h('time', { class: 'muted' }, ` ${fmtAgo(m.created_at)}`)), h('p', {}, m.content))))
            : empty('No messages yet.'),
        );
      } catch (e) {
        mount(list, failure(e, 'Messages'));
      }
    };
    let form = null;
    if (operator) {
      const content = textarea('content', '', { rows: 2, placeholder: `Message to ${agent.name}`, 'aria-label': 'Message' });
      const send = button('Send message', null, { kind: 'primary', type: 'submit', small: true });
      form = h('form', { class: 'comment-form' }, content, send);
      form.addEventListener('submit', async (ev) => {
        ev.preventDefault();
        if (!content.value.trim()) return;
        await busy(send, async () => {
          await post('/agents/message', { from: username(), to: agent.name, content: content.value.trim(), type: 'request' });
          content.value = '';
          toast('Message sent', 'success');
          await load();
        });
      });
    }
    panel.append(form, list);
    load();
  };
}

function tasksTab(agent) {
  return async (panel) => {
    panel.append(loading());
    try {
      const r = await get(`/tasks${query({ assigned_to: agent.name, limit: 200 })}`);
      mount(
        panel,
        table(
          [
            { label: 'Task', render: (t) => h('a', { href: `/tasks?task=${t.id}` }, `#${t.id} ${t.title}`) },
            { label: 'Status', render: (t) => badge(t.status) },
            { label: 'Priority', render: (t) => badge(t.priority) },
            { label: 'Updated', render: (t) => fmtAgo(t.updated_at) },
          ],
          r.tasks,
          { empty: 'No tasks assigned.' },
        ),
      );
    } catch (e) {
      mount(panel, failure(e, 'Tasks'));
    }
  };
}

function costTab(agent) {
  return async (panel) => {
    panel.append(loading());
    try {
      const r = await get('/tokens?action=agent-costs&timeframe=month');
      const a = (r.agents || {})[agent.name];
      if (!a) {
        mount(panel, empty('No token usage recorded for this agent in the last 30 days.'));
        return;
      }
      mount(
        panel,
        h('div', { class: 'grid stats' }, h('div', { class: 'card stat' }, h('div', { class: 'stat-label' }, 'Cost (30 d)'), h('div', { class: 'stat-value' }, fmtCost(a.stats.totalCost))), h('div', { class: 'card stat' }, h('div', { class: 'stat-label' }, 'Tokens'), h('div', { class: 'stat-value' }, fmtNum(a.stats.totalTokens))), h('div', { class: 'card stat' }, h('div', { class: 'stat-label' }, 'Requests'), h('div', { class: 'stat-value' }, fmtNum(a.stats.requestCount)))),
        table(
          [
            { label: 'Model', render: (m) => m[0] },
            { label: 'Tokens', render: (m) => fmtNum(m[1].totalTokens), class: 'num' },
            { label: 'Cost', render: (m) => fmtCost(m[1].totalCost), class: 'num' },
          ],
          Object.entries(a.models || {}),
        ),
      );
    } catch (e) {
      mount(panel, failure(e, 'Token usage'));
    }
  };
}

export default {
  title: 'Agents',
  render(root) {
    const operator = can('operator');
    const grid = h('div', { class: 'agent-grid', id: 'agent-grid' }, loading());
    const statusSel = select('status', [['', 'All statuses'], ...STATUSES.map((s) => [s, s])], '', { 'aria-label': 'Status filter' });
    let agents = [];
    const syncBtn = operator
      ? button('Sync from gateway', async () => {
          await busy(syncBtn, async () => {
            try {
              const r = await post('/agents/sync');
              toast(`Synced ${r.synced} agents: ${r.created} created, ${r.updated} updated`, 'success');
              load();
            } catch (e) {
              if (isMissingApi(e)) toast('Sync from gateway is not available on this server yet.', 'info');
              else throw e;
            }
          }, 'Syncing…');
        })
      : null;
    const newBtn = operator ? button('New agent', () => createDialog(load), { kind: 'primary' }) : null;
    root.append(pageHeader('Agents', 'Registered agents, their status and last heartbeat', syncBtn, newBtn), h('div', { class: 'toolbar' }, statusSel), grid);
    statusSel.addEventListener('change', () => draw());

    function openDetail(agent) {
      const refresh = async () => {
        close();
        await load();
        const fresh = agents.find((a) => a.id === agent.id);
        if (fresh) openDetail(fresh);
      };
      const body = tabs([
        { key: 'overview', label: 'Overview', render: overviewTab(agent, operator, refresh) },
        { key: 'soul', label: 'Soul', render: soulTab(agent, operator) },
        { key: 'memory', label: 'Memory', render: memoryTab(agent, operator) },
        { key: 'messages', label: 'Messages', render: messagesTab(agent, operator) },
        { key: 'tasks', label: 'Tasks', render: tasksTab(agent) },
        { key: 'cost', label: 'Token cost', render: costTab(agent) },
      ]);
      const actions = operator
        ? [
            button('Delete', async () => {
              if (!(await confirmDialog(`Delete agent ${agent.name}? Its memory and connections go too.`, 'Delete'))) return;
              try {
                await del(`/agents/${agent.id}`);
                toast(`Deleted ${agent.name}`, 'success');
                close();
                load();
              } catch (e) {
                toast(errorText(e), 'error');
              }
            }, { kind: 'danger-ghost' }),
            button('Wake', () => wakeDialog(agent, load)),
          ]
        : [];
      const { close } = openDialog({ title: `${agent.name} · ${agent.role}`, body, actions, wide: true });
    }

    function draw() {
      const list = agents.filter((a) => !statusSel.value || a.status === statusSel.value);
      if (!list.length) {
        mount(grid, empty(agents.length ? 'No agent has this status.' : 'No agents yet. Create one, or sync them from your gateway.'));
        return;
      }
      mount(
        grid,
        list.map((a) => {
          const model = a.config && a.config.model;
          return h(
            'article',
            { class: ['card', 'agent-card', `status-${a.status}`], dataset: { agent: a.name } },
            h('div', { class: 'agent-head' }, h('span', { class: ['status-dot', `c-${a.status}`], title: a.status }), h('h2', { class: 'agent-name' }, a.name), badge(a.status)),
            h('p', { class: 'muted' }, a.role, model ? ` · ${model}` : ''),
            h(
              'dl',
              { class: 'agent-stats' },
              h('div', {}, h('dt', {}, 'Last seen'), h('dd', {}, fmtAgo(a.last_seen))),
              h('div', {}, h('dt', {}, 'Tasks'), h('dd', {}, String(a.taskStats.total))),
              h('div', {}, h('dt', {}, 'Active'), h('dd', {}, String(a.taskStats.assigned + a.taskStats.in_progress))),
              h('div', {}, h('dt', {}, 'Done'), h('dd', {}, String(a.taskStats.completed))),
            ),
            a.last_activity ? h('p', { class: 'small muted clamp' }, a.last_activity) : null,
            h('div', { class: 'row card-actions' }, button('Details', () => openDetail(a), { small: true }), operator ? button('Wake', () => wakeDialog(a, load), { small: true, kind: 'primary', dataset: { action: 'wake' } }) : null),
          );
        }),
      );
    }

    async function load() {
      try {
        const r = await get('/agents?limit=200');
        agents = r.agents;
        draw();
      } catch (e) {
        mount(grid, failure(e, 'Agents'));
      }
    }

    load();
    const off = on(['agent.*', 'task.*'], debounce(load, 200));
    return off;
  },
};
