// /users (admin) — users CRUD and access requests.

import { del, get, post, put } from '../api.js';
import { session } from '../session.js';
import {
  badge, busy, button, confirmDialog, errorText, failure, field, fmtAgo, fmtTime, formError, h, input, loading, mount,
  openDialog, pageHeader, select, showFormError, table, toast,
} from '../ui.js';

const ROLES = ['viewer', 'operator', 'admin'];

function editor(user, onDone) {
  const u = user || { role: 'viewer' };
  const form = h(
    'form',
    { class: 'form', id: 'user-form' },
    user ? null : field('Username', input('username', '', { required: true, autocomplete: 'off' })),
    field('Display name', input('display_name', u.display_name || '')),
    field('E-mail', input('email', u.email || '', { type: 'email' })),
    user && user.id === session.user.id ? null : field('Role', select('role', ROLES, u.role)),
    field(user ? 'New password' : 'Password', input('password', '', { type: 'password', autocomplete: 'new-password', minlength: 12 }), user ? 'Leave empty to keep the current password. At least 12 characters.' : 'At least 12 characters.'),
  );
  const err = formError();
  form.append(err);
  const save = button(user ? 'Save' : 'Create user', null, { kind: 'primary', type: 'submit' });
  save.setAttribute('form', 'user-form');
  const { close } = openDialog({ title: user ? `Edit ${user.username}` : 'New user', body: form, actions: [button('Cancel', () => close()), save] });
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const v = (n) => (form.elements[n] ? form.elements[n].value.trim() : '');
    const body = { display_name: v('display_name') };
    if (v('email')) body.email = v('email');
    if (form.elements.role && (!user || v('role') !== user.role)) body.role = v('role');
    if (form.elements.password.value) body.password = form.elements.password.value;
    save.disabled = true;
    try {
      if (user) await put('/auth/users', { id: user.id, ...body });
      else await post('/auth/users', { username: v('username'), password: form.elements.password.value, ...body });
      toast(user ? 'User saved' : 'User created', 'success');
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
  title: 'Users',
  render(root) {
    const users = h('div', {}, loading());
    const requests = h('section', { class: 'card panel' });
    root.append(pageHeader('Users', 'Who can sign in, and with which role', button('New user', () => editor(null, load), { kind: 'primary' })), users, requests);

    async function loadUsers() {
      try {
        const r = await get('/auth/users');
        const me = session.user.id;
        mount(
          users,
          table(
            [
              { label: 'User', render: (u) => h('div', {}, h('strong', {}, u.username), u.id === me ? h('span', { class: 'tag' }, 'you') : null, h('div', { class: 'muted small' }, u.display_name)) },
              {
                label: 'Role',
                render: (u) => {
                  if (u.id === me) return badge(u.role);
                  const sel = select('role', ROLES, u.role, { 'aria-label': `Role of ${u.username}` });
                  sel.addEventListener('change', async () => {
                    try {
                      await put('/auth/users', { id: u.id, role: sel.value });
                      toast(`${u.username} is now ${sel.value}`, 'success');
                    } catch (e) {
                      sel.value = u.role;
                      toast(errorText(e), 'error');
                    }
                  });
                  return sel;
                },
              },
              { label: 'Provider', render: (u) => u.provider },
              { label: 'E-mail', render: (u) => u.email || '—' },
              { label: 'Last sign-in', render: (u) => h('span', { title: fmtTime(u.last_login_at) }, fmtAgo(u.last_login_at)) },
              {
                label: 'Actions',
                render: (u) =>
                  h(
                    'div',
                    { class: 'row' },
                    button('Edit', () => editor(u, load), { small: true }),
                    button('Delete', async () => {
                      if (!(await confirmDialog(`Delete ${u.username}? Their sessions end immediately.`, 'Delete'))) return;
                      try {
                        await del('/auth/users', { id: u.id });
                        toast('User deleted', 'success');
                        load();
                      } catch (e) {
                        toast(errorText(e), 'error');
                      }
                    }, { small: true, kind: 'danger-ghost', disabled: u.id === me, title: u.id === me ? 'You cannot delete yourself' : undefined }),
                  ),
              },
            ],
            r.users,
          ),
        );
      } catch (e) {
        mount(users, failure(e, 'Users'));
      }
    }

    async function loadRequests() {
      try {
        const r = await get('/auth/access-requests');
        const pending = r.requests.filter((x) => x.status === 'pending');
        mount(
          requests,
          h('h2', {}, 'Access requests', pending.length ? h('span', { class: 'nav-count' }, String(pending.length)) : null),
          table(
            [
              { label: 'Person', render: (x) => h('div', {}, h('strong', {}, x.username), h('div', { class: 'muted small' }, x.email)) },
              { label: 'Reason', render: (x) => x.reason || '—' },
              { label: 'Status', render: (x) => badge(x.status) },
              { label: 'Requested', render: (x) => fmtAgo(x.created_at) },
              {
                label: 'Decision',
                render: (x) => {
                  if (x.status !== 'pending') return '—';
                  const role = select('role', ROLES, 'viewer', { 'aria-label': 'Role to grant' });
                  return h(
                    'div',
                    { class: 'row' },
                    role,
                    button('Approve', (ev) => busy(ev.currentTarget, async () => {
                      await post('/auth/access-requests', { id: x.id, action: 'approve', role: role.value });
                      toast(`${x.username} approved as ${role.value}`, 'success');
                      await load();
                    }), { small: true, kind: 'success' }),
                    button('Reject', (ev) => busy(ev.currentTarget, async () => {
                      await post('/auth/access-requests', { id: x.id, action: 'reject' });
                      toast(`${x.username} rejected`, 'info');
                      await load();
                    }), { small: true, kind: 'danger-ghost' }),
                  );
                },
              },
            ],
            r.requests,
            { empty: 'No access requests. People who sign in with an external provider appear here.' },
          ),
        );
      } catch (e) {
        mount(requests, h('h2', {}, 'Access requests'), failure(e, 'Access requests'));
      }
    }

    function load() {
      return Promise.all([loadUsers(), loadRequests()]);
    }
    load();
  },
};
