// /settings (admin) — settings by category; edit, save, and reset to the default.

import { del, get, put } from '../api.js';
import { badge, busy, button, confirmDialog, failure, fmtAgo, h, input, label, loading, mount, pageHeader, toast } from '../ui.js';

export default {
  title: 'Settings',
  render(root) {
    const body = h('div', {}, loading());
    const saveBtn = button('Save changes', () => save(), { kind: 'primary', disabled: true });
    root.append(pageHeader('Settings', 'Retention, gateway and general behaviour', saveBtn), body);
    let inputs = new Map();

    const dirty = () => [...inputs.entries()].filter(([, x]) => x.el.value !== x.value);
    const updateSave = () => {
      saveBtn.disabled = !dirty().length;
      saveBtn.textContent = dirty().length ? `Save ${dirty().length} change${dirty().length > 1 ? 's' : ''}` : 'Save changes';
    };

    async function save() {
      const changes = Object.fromEntries(dirty().map(([k, x]) => [k, x.el.value]));
      await busy(saveBtn, async () => {
        const r = await put('/settings', { settings: changes });
        toast(`Saved ${r.count} setting${r.count === 1 ? '' : 's'}`, 'success');
        await load();
      });
    }

    async function load() {
      try {
        const r = await get('/settings');
        inputs = new Map();
        const grouped = r.grouped || {};
        const cats = Object.keys(grouped).sort();
        mount(
          body,
          cats.map((cat) =>
            h(
              'section',
              { class: 'card panel' },
              h('h2', {}, label(cat)),
              h(
                'div',
                { class: 'settings-list' },
                grouped[cat].map((s) => {
                  const el = input(s.key, s.value, { 'aria-label': s.key });
                  el.addEventListener('input', updateSave);
                  inputs.set(s.key, { el, value: s.value });
                  return h(
                    'div',
                    { class: 'setting' },
                    h('div', { class: 'setting-info' }, h('div', { class: 'mono' }, s.key, ' ', s.is_default ? badge('default') : badge('custom')), h('div', { class: 'muted small' }, s.description || ''), s.is_default ? null : h('div', { class: 'muted small' }, `changed by ${s.updated_by || '—'} ${fmtAgo(s.updated_at)}`)),
                    h(
                      'div',
                      { class: 'setting-edit' },
                      el,
                      button('Reset', async (ev) => {
                        if (!(await confirmDialog(`Reset ${s.key} to its default?`, 'Reset', 'primary'))) return;
                        await busy(ev.currentTarget, async () => {
                          const res = await del('/settings', { key: s.key });
                          toast(`${s.key} reset to ${res.default_value}`, 'success');
                          await load();
                        });
                      }, { small: true, disabled: s.is_default }),
                    ),
                  );
                }),
              ),
            ),
          ),
        );
        updateSave();
      } catch (e) {
        mount(body, failure(e, 'Settings'));
      }
    }
    load();
  },
};
