// /backups (admin) — create (with progress), list, delete.

import { del, get, post } from '../api.js';
import { button, confirmDialog, errorText, failure, fmtAgo, fmtBytes, fmtTime, h, loading, mount, pageHeader, table, toast } from '../ui.js';

export default {
  title: 'Backups',
  render(root) {
    const body = h('div', {}, loading());
    const progress = h('div', { class: 'progress', hidden: true, role: 'progressbar', 'aria-label': 'Creating backup' }, h('div', { class: 'progress-bar' }));
    const status = h('p', { class: 'muted' });
    const create = button('Create backup', async () => {
      create.disabled = true;
      progress.hidden = false;
      status.textContent = 'Taking a consistent snapshot while OpsDeck keeps running…';
      const started = performance.now();
      try {
        const r = await post('/backup');
        status.textContent = `Backup ${r.backup.name} created (${fmtBytes(r.backup.size)}) in ${Math.round(performance.now() - started)} ms.`;
        toast('Backup created', 'success');
        await load();
      } catch (e) {
        status.textContent = '';
        toast(errorText(e), 'error');
      } finally {
        create.disabled = false;
        progress.hidden = true;
      }
    }, { kind: 'primary' });
    root.append(pageHeader('Backups', 'Snapshots of the database', create), progress, status, body);

    async function load() {
      try {
        const r = await get('/backup');
        mount(
          body,
          r.dir ? h('p', { class: 'muted small' }, 'Stored in ', h('code', {}, r.dir)) : null,
          table(
            [
              { label: 'Name', render: (b) => h('span', { class: 'mono' }, b.name) },
              { label: 'Size', render: (b) => fmtBytes(b.size), class: 'num' },
              { label: 'Created', render: (b) => h('span', { title: fmtTime(b.created_at) }, fmtAgo(b.created_at)) },
              {
                label: 'Actions',
                render: (b) =>
                  button('Delete', async () => {
                    if (!(await confirmDialog(`Delete ${b.name}?`, 'Delete'))) return;
                    try {
                      await del('/backup', { name: b.name });
                      toast('Backup deleted', 'success');
                      load();
                    } catch (e) {
                      toast(errorText(e), 'error');
                    }
                  }, { small: true, kind: 'danger-ghost' }),
              },
            ],
            r.backups,
            { empty: 'No backups yet.' },
          ),
          h('p', { class: 'muted small' }, 'Restore with the service stopped: opsdeck restore <file>.'),
        );
      } catch (e) {
        create.disabled = true;
        mount(body, failure(e, 'Backups'));
      }
    }
    load();
  },
};
