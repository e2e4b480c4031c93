// /gateways (admin) — the gateway registry: add, edit, delete, primary flag, health check with latency.

import { del, get, post, put } from '../api.js';
import {
  badge, busy, button, checkbox, confirmDialog, errorText, failure, field, fmtAgo, formError, h, input, loading, mount,
  openDialog, pageHeader, showFormError, table, toast,
} from '../ui.js';

function editor(gw, onDone) {
  const g = gw || { port: 18789, is_primary: false };
  const form = h(
    'form',
    { class: 'form', id: 'gateway-form' },
    field('Name', input('name', g.name || '', { required: true })),
    h('div', { class: 'form-row' }, field('Host', input('host', g.host || '', { required: true, placeholder: '127.0.0.1' })), field('Port', input('port', g.port, { type: 'number', min: 1, max: 65535 }))),
    field('Token', input('token', '', { type: 'password', autocomplete: 'off', placeholder: gw && gw.token_set ? 'set — leave empty to keep' : 'optional bearer token' })),
    checkbox('is_primary', g.is_primary, 'Primary gateway (used for spawning and sync)'),
  );
  const err = formError();
  form.append(err);
  const save = button(gw ? 'Save' : 'Add gateway', null, { kind: 'primary', type: 'submit' });
  save.setAttribute('form', 'gateway-form');
  const { close } = openDialog({ title: gw ? `Edit ${gw.name}` : 'Add gateway', body: form, actions: [button('Cancel', () => close()), save] });
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const v = (n) => form.elements[n].value.trim();
    const body = { name: v('name'), host: v('host'), port: Number(v('port')), is_primary: form.elements.is_primary.checked };
    if (v('token')) body.token = v('token');
    save.disabled = true;
    try {
      if (gw) await put('/gateways', { id: gw.id, ...body });
      else await post('/gateways', body);
      toast(gw ? 'Gateway saved' : 'Gateway added', 'success');
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
  title: 'Gateways',
  render(root) {
    const body = h('div', {}, loading());
    const results = h('div', { class: 'health-results' });
    const checkAll = button('Check all', async () => {
      await busy(checkAll, () => check(undefined), 'Checking…');
    });
    root.append(pageHeader('Gateways', 'Agent gateways OpsDeck talks to', checkAll, button('Add gateway', () => editor(null, load), { kind: 'primary' })), results, body);

    async function check(id) {
      let r;
      try {
        r = await post('/gateways/health', id === undefined ? {} : { gateway_id: id });
      } catch (e) {
        if (e.status === 429) throw new Error('Health checks run at most once every 10 seconds. Try again shortly.');
        throw e;
      }
      mount(
        results,
        h(
          'div',
          { class: ['notice', r.healthy ? 'notice-success' : 'notice-error'], role: 'status' },
          h('strong', {}, r.healthy ? 'Healthy' : 'Unhealthy'),
          r.latency_ms !== null && r.latency_ms !== undefined ? ` · ${r.latency_ms} ms` : '',
          h('ul', {}, r.details.map((d) => h('li', {}, `${d.name}: ${d.status}`, d.latency !== null && d.latency !== undefined ? ` (${d.latency} ms)` : '', d.error ? ` — ${d.error}` : ''))),
        ),
      );
      await load();
    }

    async function load() {
      try {
        const r = await get('/gateways');
        mount(
          body,
          table(
            [
              { label: 'Name', render: (g) => h('div', {}, h('strong', {}, g.name), g.is_primary ? h('span', { class: 'tag tag-primary' }, 'primary') : null) },
              { label: 'Address', render: (g) => h('span', { class: 'mono' }, `${g.host}:${g.port}`) },
              { label: 'Status', render: (g) => badge(g.status) },
              { label: 'Latency', render: (g) => (g.latency !== null && g.latency !== undefined ? `${g.latency} ms` : '—'), class: 'num' },
              { label: 'Last seen', render: (g) => fmtAgo(g.last_seen) },
              { label: 'Sessions / agents', render: (g) => `${g.sessions_count} / ${g.agents_count}` },
              { label: 'Token', render: (g) => (g.token_set ? 'set' : '—') },
              {
                label: 'Actions',
                render: (g) =>
                  h(
                    'div',
                    { class: 'row' },
                    button('Check', (ev) => busy(ev.currentTarget, () => check(g.id), 'Checking…'), { small: true }),
                    button('Edit', () => editor(g, load), { small: true }),
                    button('Delete', async () => {
                      if (!(await confirmDialog(`Delete gateway ${g.name}?`, 'Delete'))) return;
                      try {
                        await del('/gateways', { id: g.id });
                        toast('Gateway deleted', 'success');
                        load();
                      } catch (e) {
                        toast(errorText(e), 'error');
                      }
                    }, { small: true, kind: 'danger-ghost', disabled: g.is_primary, title: g.is_primary ? 'The primary gateway cannot be deleted' : undefined }),
                  ),
              },
            ],
            r.gateways,
            { empty: 'No gateways registered.' },
          ),
        );
      } catch (e) {
        mount(body, failure(e, 'Gateways'));
      }
    }
    load();
  },
};
