// /alerts — rule CRUD, the enable toggle, and "evaluate now" with its results.

import { del, get, post, put } from '../api.js';
import { on } from '../sse.js';
import { can, username } from '../session.js';
import {
  badge, busy, button, confirmDialog, debounce, errorText, failure, field, fmtAgo, formError, h, input, label, loading,
  mount, openDialog, pageHeader, select, showFormError, table, textarea, toast,
} from '../ui.js';

const FIELDS = {
  agent: ['status', 'role', 'name', 'last_seen', 'last_activity'],
  task: ['status', 'priority', 'assigned_to', 'title'],
  session: ['status', 'agent', 'kind', 'model', 'channel', 'age_minutes', 'total_tokens'],
  activity: ['type', 'actor', 'entity_type'],
};
const OPERATORS = ['equals', 'not_equals', 'greater_than', 'less_than', 'contains', 'count_above', 'count_below', 'age_minutes_above'];

function editor(rule, onDone) {
  const r = rule || { entity_type: 'agent', condition_field: 'status', condition_operator: 'equals', condition_value: '', cooldown_minutes: 60, action_config: {} };
  const entity = select('entity_type', Object.keys(FIELDS), r.entity_type);
  const fieldSel = select('condition_field', FIELDS[r.entity_type] || [], r.condition_field);
  entity.addEventListener('change', () => mount(fieldSel, FIELDS[entity.value].map((f) => h('option', { value: f }, label(f)))));
  const form = h(
    'form',
    { class: 'form', id: 'alert-form' },
    field('Name', input('name', r.name || '', { required: true })),
    field('Description', textarea('description', r.description || '', { rows: 2 })),
    h('div', { class: 'form-row' }, field('Entity', entity), field('Field', fieldSel)),
    h('div', { class: 'form-row' }, field('Operator', select('condition_operator', OPERATORS, r.condition_operator)), field('Value', input('condition_value', r.condition_value, { required: true, placeholder: 'e.g. offline:2' }), 'count operators take match:threshold or a number')),
    h('div', { class: 'form-row' }, field('Cooldown (minutes)', input('cooldown_minutes', r.cooldown_minutes, { type: 'number', min: 0 })), field('Notify', input('recipient', (r.action_config || {}).recipient || username(), { placeholder: 'username' }))),
  );
  const err = formError();
  form.append(err);
  const save = button(rule ? 'Save rule' : 'Create rule', null, { kind: 'primary', type: 'submit' });
  save.setAttribute('form', 'alert-form');
  const { close } = openDialog({ title: rule ? `Edit ${rule.name}` : 'New alert rule', body: form, actions: [button('Cancel', () => close()), save] });
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const v = (n) => form.elements[n].value.trim();
    const body = {
      name: v('name'), description: v('description'), entity_type: v('entity_type'), condition_field: v('condition_field'),
      condition_operator: v('condition_operator'), condition_value: v('condition_value'), cooldown_minutes: Number(v('cooldown_minutes') || 60),
      action_type: 'notification', action_config: { recipient: v('recipient') || username() },
    };
    save.disabled = true;
    try {
      if (rule) await put('/alerts', { id: rule.id, ...body });
      else await post('/alerts', body);
      toast(rule ? 'Rule saved' : 'Rule created', 'success');
      close();
      onDone();
    } catch (e) {
      showFormError(err, e);
    } finally {
      save.disabled = false;
    }
  });
}

export default {
  title: 'Alerts',
  render(root) {
    const operator = can('operator');
    const admin = can('admin');
    const results = h('div', { id: 'alert-results' });
    const body = h('div', {}, loading());
    const evalBtn = button('Evaluate now', async () => {
      await busy(evalBtn, async () => {
        let r;
        try {
          r = await post('/alerts', { action: 'evaluate' });
        } catch (e) {
          if (e.status === 429) throw new Error('Evaluation runs at most once every 10 seconds. Try again shortly.');
          throw e;
        }
        mount(
          results,
          h(
            'section',
            { class: 'card panel' },
            h('h2', {}, `Evaluated ${r.evaluated} rules · ${r.triggered} triggered`),
            table(
              [
                { label: 'Rule', render: (x) => x.rule_name },
                { label: 'Result', render: (x) => badge(x.triggered ? 'triggered' : 'ok') },
                { label: 'Reason', render: (x) => x.reason || '—' },
              ],
              r.results || [],
              { empty: 'No enabled rules.' },
            ),
          ),
        );
        load();
      }, 'Evaluating…');
    });
    root.append(pageHeader('Alerts', 'Rules that watch agents, tasks, sessions and activity', evalBtn, operator ? button('New rule', () => editor(null, load), { kind: 'primary' }) : null), results, body);

    async function load() {
      try {
        const r = await get('/alerts');
        const cols = [
          { label: 'Rule', render: (x) => h('div', {}, h('strong', {}, x.name), x.description ? h('div', { class: 'muted small' }, x.description) : null) },
          { label: 'Condition', render: (x) => h('span', { class: 'mono small' }, `${x.entity_type}.${x.condition_field} ${x.condition_operator} ${x.condition_value}`) },
          {
            label: 'Enabled',
            render: (x) => {
              const box = h('input', { type: 'checkbox', class: 'switch', checked: x.enabled, disabled: !operator, 'aria-label': `Enable ${x.name}` });
              box.addEventListener('change', async () => {
                try {
                  await put('/alerts', { id: x.id, enabled: box.checked });
                  toast(`${x.name} ${box.checked ? 'enabled' : 'disabled'}`, 'success');
                } catch (e) {
                  box.checked = !box.checked;
                  toast(errorText(e), 'error');
                }
              });
              return box;
            },
          },
          { label: 'Last triggered', render: (x) => fmtAgo(x.last_triggered_at) },
          { label: 'Count', render: (x) => String(x.trigger_count ?? 0), class: 'num' },
          { label: 'Cooldown', render: (x) => `${x.cooldown_minutes} min` },
        ];
        if (operator) {
          cols.push({
            label: 'Actions',
            render: (x) =>
              h(
                'div',
                { class: 'row' },
                button('Edit', () => editor(x, load), { small: true }),
                admin
                  ? button('Delete', async () => {
                      if (!(await confirmDialog(`Delete rule ${x.name}?`, 'Delete'))) return;
                      try {
                        await del('/alerts', { id: x.id });
                        toast('Rule deleted', 'success');
                        load();
                      } catch (e) {
                        toast(errorText(e), 'error');
                      }
                    }, { small: true, kind: 'danger-ghost' })
                  : null,
              ),
          });
        }
        mount(body, table(cols, r.rules, { empty: 'No alert rules yet.' }));
      } catch (e) {
        evalBtn.disabled = true;
        mount(body, failure(e, 'Alerts'));
      }
    }
    load();
    return on(['alert.*', 'notification.created'], debounce(load, 300));
  },
};
