// /webhooks (admin) — CRUD, the secret shown once with a copy button, deliveries with status, test,
// retry and circuit reset.

import { del, get, post, put, query } from '../api.js';
import {
  badge, busy, button, checkbox, confirmDialog, copyField, errorText, failure, field, fmtAgo, fmtTime, formError, h,
  input, loading, mount, openDialog, pageHeader, select, showFormError, table, toast,
} from '../ui.js';

function showSecret(title, secret) {
  const { close } = openDialog({
    title,
    body: h(
      'div',
      { class: 'secret-once' },
      h('p', {}, h('strong', {}, 'Copy this signing secret now. '), 'It is shown only once; afterwards only its last 4 characters are visible.'),
      copyField(secret),
      h('p', { class: 'muted small' }, 'Receivers verify X-SVC-Signature: sha256=<hex HMAC-SHA256 of the raw body with this secret>.'),
    ),
    actions: [button('I have stored it', () => close(), { kind: 'primary' })],
  });
}

function editor(hook, onDone) {
  const w = hook || { events: ['*'] };
  const form = h(
    'form',
    { class: 'form', id: 'webhook-form' },
    field('Name', input('name', w.name || '', { required: true })),
    field('URL', input('url', w.url || '', { type: 'url', required: true, placeholder: 'https://example.com/hooks/opsdeck' })),
    field('Events', input('events', (w.events || ['*']).join(', ')), '* for all, or e.g. activity.task_created, agent.status_change, notification.alert'),
    hook ? null : checkbox('generate_secret', true, 'Sign deliveries with a secret'),
  );
  const err = formError();
  form.append(err);
  const save = button(hook ? 'Save' : 'Create webhook', null, { kind: 'primary', type: 'submit' });
  save.setAttribute('form', 'webhook-form');
  const { close } = openDialog({ title: hook ? `Edit ${hook.name}` : 'New webhook', body: form, actions: [button('Cancel', () => close()), save] });
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const v = (n) => form.elements[n].value.trim();
    const events = v('events').split(',').map((s) => s.trim()).filter(Boolean);
    const body = { name: v('name'), url: v('url'), events: events.length ? events : ['*'] };
    save.disabled = true;
    try {
      if (hook) {
        await put('/webhooks', { id: hook.id, ...body });
        toast('Webhook saved', 'success');
        close();
      } else {
        const r = await post('/webhooks', { ...body, generate_secret: form.elements.generate_secret.checked });
        close();
        if (r.secret) showSecret(`Webhook “${r.name}” created`, r.secret);
        else toast('Webhook created (unsigned)', 'success');
      }
      onDone();
    } catch (e) {
      showFormError(err, e);
    } finally {
      save.disabled = false;
    }
  });
}

export default {
  title: 'Webhooks',
  render(root) {
    let hooks = [];
    const body = h('div', {}, loading());
    const deliveries = h('section', { class: 'card panel', id: 'deliveries' });
    const hookSel = select('webhook', [['', 'All webhooks']], '', { 'aria-label': 'Deliveries of' });
    hookSel.addEventListener('change', () => loadDeliveries());
    root.append(pageHeader('Webhooks', 'Signed HTTP callbacks for OpsDeck events', button('New webhook', () => editor(null, load), { kind: 'primary' })), body, deliveries);

    const action = async (btn, fn, okText) => {
      await busy(btn, async () => {
        await fn();
        if (okText) toast(okText, 'success');
        await load();
      });
    };

    async function loadDeliveries() {
      const id = hookSel.value;
      try {
        const r = await get(`/webhooks/deliveries${query({ webhook_id: id, limit: 50 })}`);
        const name = (wid) => (hooks.find((x) => x.id === wid) || {}).name || `#${wid}`;
        mount(
          deliveries,
          h('div', { class: 'panel-head' }, h('h2', {}, 'Deliveries'), hookSel),
          table(
            [
              { label: 'When', render: (d) => h('span', { title: fmtTime(d.created_at) }, fmtAgo(d.created_at)), class: 'nowrap' },
              { label: 'Webhook', render: (d) => name(d.webhook_id) },
              { label: 'Event', render: (d) => h('span', { class: 'mono small' }, d.event_type) },
              { label: 'Result', render: (d) => h('span', {}, badge(d.state), d.status_code ? ` ${d.status_code}` : '', d.error ? h('div', { class: 'muted small' }, d.error) : null) },
              { label: 'Attempt', render: (d) => String(d.attempt + 1), class: 'num' },
              { label: 'Duration', render: (d) => (d.state === 'pending' ? '—' : `${Math.round(d.duration_ms)} ms`), class: 'num nowrap' },
              { label: 'Next retry', render: (d) => (d.next_retry_at ? fmtTime(d.next_retry_at) : '—') },
              {
                label: 'Actions',
                render: (d) =>
                  d.state === 'pending'
                    ? h('span', { class: 'muted' }, 'queued')
                    : button('Retry', (ev) => busy(ev.currentTarget, async () => {
                        const res = await post('/webhooks/retry', { delivery_id: d.id });
                        toast(res.success ? `Delivered (${res.status_code})` : `Retry failed${res.status_code ? ` (${res.status_code})` : ''}`, res.success ? 'success' : 'error');
                        await load();
                      }), { small: true }),
              },
            ],
            r.deliveries,
            { empty: 'No deliveries yet.' },
          ),
          r.total > r.deliveries.length ? h('p', { class: 'muted small' }, `Showing the latest ${r.deliveries.length} of ${r.total}.`) : null,
        );
      } catch (e) {
        mount(deliveries, failure(e, 'Deliveries'));
      }
    }

    async function load() {
      try {
        const r = await get('/webhooks');
        hooks = r.webhooks;
        const cur = hookSel.value;
        mount(hookSel, h('option', { value: '' }, 'All webhooks'), hooks.map((w) => h('option', { value: w.id, selected: String(w.id) === cur }, w.name)));
        mount(
          body,
          table(
            [
              { label: 'Webhook', render: (w) => h('div', {}, h('strong', {}, w.name), h('div', { class: 'muted small mono break' }, w.url)) },
              { label: 'Events', render: (w) => h('div', { class: 'tags' }, w.events.map((e) => h('span', { class: 'tag' }, e))) },
              { label: 'Secret', render: (w) => h('span', { class: 'mono small' }, w.secret ? `…${w.secret.slice(-4)}` : 'unsigned') },
              { label: 'State', render: (w) => (w.circuit_open ? badge('circuit_open') : badge(w.enabled ? 'enabled' : 'disabled')) },
              { label: 'Deliveries', render: (w) => h('span', {}, `${w.successful_deliveries}/${w.total_deliveries} ok`, w.consecutive_failures ? h('div', { class: 'muted small' }, `${w.consecutive_failures} failing in a row`) : null) },
              { label: 'Last', render: (w) => (w.last_fired_at ? `${w.last_status ?? 'no answer'} · ${fmtAgo(w.last_fired_at)}` : 'never') },
              {
                label: 'Actions',
                render: (w) =>
                  h(
                    'div',
                    { class: 'row wrap' },
                    button('Test', (ev) => busy(ev.currentTarget, async () => {
                      const res = await post('/webhooks/test', { id: w.id });
                      toast(res.success ? `Test delivered: ${res.status_code} in ${Math.round(res.duration_ms)} ms` : `Test failed: ${res.error || res.status_code}`, res.success ? 'success' : 'error');
                      await load();
                    }, 'Sending…'), { small: true }),
                    w.circuit_open ? button('Reset circuit', (ev) => action(ev.currentTarget, () => put('/webhooks', { id: w.id, reset_circuit: true }), 'Circuit reset; held retries resume'), { small: true, kind: 'primary' }) : null,
                    button(w.enabled ? 'Disable' : 'Enable', (ev) => action(ev.currentTarget, () => put('/webhooks', { id: w.id, enabled: !w.enabled }), w.enabled ? 'Disabled' : 'Enabled'), { small: true }),
                    button('Edit', () => editor(w, load), { small: true }),
                    button('New secret', async (ev) => {
                      if (!(await confirmDialog(`Replace the secret of ${w.name}? Receivers must be updated.`, 'Regenerate', 'primary'))) return;
                      await busy(ev.currentTarget, async () => {
                        const res = await put('/webhooks', { id: w.id, regenerate_secret: true });
                        showSecret(`New secret for “${w.name}”`, res.secret);
                        await load();
                      });
                    }, { small: true }),
                    button('Delete', async () => {
                      if (!(await confirmDialog(`Delete webhook ${w.name} and its delivery history?`, 'Delete'))) return;
                      try {
                        await del('/webhooks', { id: w.id });
                        toast('Webhook deleted', 'success');
                        load();
                      } catch (e) {
                        toast(errorText(e), 'error');
                      }
                    }, { small: true, kind: 'danger-ghost' }),
                  ),
              },
            ],
            hooks,
            { empty: 'No webhooks yet. Create one to receive OpsDeck events.', rowData: (w) => ({ webhook: w.name }) },
          ),
        );
        await loadDeliveries();
      } catch (e) {
        mount(body, failure(e, 'Webhooks'));
      }
    }
    load();
  },
};
