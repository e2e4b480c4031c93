// /notifications — the list (newest first), unread filter, mark read, delete (admin).

import { del, get, put, query } from '../api.js';
import { on } from '../sse.js';
import { can } from '../session.js';
import { badge, busy, button, checkbox, debounce, empty, errorText, failure, fmtAgo, fmtTime, h, loading, mount, pageHeader, toast } from '../ui.js';

const PAGE = 50;

function changed() {
  window.dispatchEvent(new Event('opsdeck:notifications-changed'));
}

export default {
  title: 'Notifications',
  render(root) {
    const admin = can('admin');
    let offset = 0;
    let items = [];
    const unreadOnly = checkbox('unread_only', false, 'Unread only');
    const list = h('div', {}, loading());
    const pager = h('div', { class: 'pager' });
    const markAll = button('Mark all read', async () => {
      const ids = items.filter((n) => !n.read_at).map((n) => n.id);
      if (!ids.length) return;
      await busy(markAll, async () => {
        const r = await put('/notifications', { ids });
        toast(`Marked ${r.markedAsRead} as read`, 'success');
        changed();
        await load();
      });
    });
    root.append(pageHeader('Notifications', null, markAll), h('div', { class: 'toolbar' }, unreadOnly), list, pager);
    unreadOnly.querySelector('input').addEventListener('change', () => { offset = 0; load(); });

    async function load() {
      try {
        const r = await get(`/notifications${query({ unread_only: unreadOnly.querySelector('input').checked ? 'true' : '', limit: PAGE, offset })}`);
        items = r.notifications;
        markAll.disabled = !items.some((n) => !n.read_at);
        if (!items.length) mount(list, empty('No notifications.'));
        else
          mount(
            list,
            h(
              'ul',
              { class: 'notif-list' },
              items.map((n) =>
                h(
                  'li',
                  { class: ['card', 'notif', n.read_at ? 'read' : 'unread'], dataset: { id: n.id } },
                  h('div', { class: 'notif-head' }, badge(n.type), h('strong', {}, n.title), h('time', { class: 'muted', title: fmtTime(n.created_at) }, fmtAgo(n.created_at))),
                  h('p', {}, n.message),
                  h(
                    'div',
                    { class: 'row small muted' },
                    `to ${n.recipient}`,
                    n.source_type ? ` · ${n.source_type} ${n.source_id ?? ''}` : '',
                    h('span', { class: 'spacer' }),
                    n.read_at
                      ? 'read'
                      : button('Mark read', async (ev) => {
                          await busy(ev.currentTarget, async () => {
                            await put('/notifications', { ids: [n.id] });
                            changed();
                            await load();
                          });
                        }, { small: true }),
                    admin
                      ? button('Delete', async () => {
                          try {
                            await del('/notifications', { ids: [n.id] });
                            changed();
                            load();
                          } catch (e) {
                            toast(errorText(e), 'error');
                          }
                        }, { small: true, kind: 'danger-ghost' })
                      : null,
                  ),
                ),
              ),
            ),
          );
        mount(
          pager,
          h('span', { class: 'muted' }, `${r.total ? offset + 1 : 0}–${offset + items.length} of ${r.total} · ${r.unreadCount} unread`),
          button('Previous', () => { offset = Math.max(0, offset - PAGE); load(); }, { small: true, disabled: offset === 0 }),
          button('Next', () => { offset += PAGE; load(); }, { small: true, disabled: offset + PAGE >= r.total }),
        );
      } catch (e) {
        mount(list, failure(e, 'Notifications'));
      }
    }
    load();
    return on(['notification.*'], debounce(load, 200));
  },
};
