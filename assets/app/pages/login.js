// /login: username and password; errors inline.

import { post } from '../api.js';
import { errorText, h, input } from '../ui.js';

export default {
  title: 'Sign in',
  render(root, { params, onSignedIn }) {
    const error = h('div', { class: 'form-error', role: 'alert', id: 'login-error', hidden: true });
    const user = input('username', '', { autocomplete: 'username', required: true, autofocus: true, id: 'login-username' });
    const pass = input('password', '', { type: 'password', autocomplete: 'current-password', required: true, id: 'login-password' });
    const submit = h('button', { type: 'submit', class: 'btn btn-primary btn-block' }, 'Sign in');
    const form = h(
      'form',
      { class: 'login-form', novalidate: true },
      h('div', { class: 'field' }, h('label', { for: 'login-username' }, 'Username'), user),
      h('div', { class: 'field' }, h('label', { for: 'login-password' }, 'Password'), pass),
      error,
      submit,
    );
    const pending = params.get('pending')
      ? h('div', { class: 'notice' }, 'Your access request was received. An administrator has to approve it before you can sign in.')
      : null;
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      error.hidden = true;
      if (!user.value.trim() || !pass.value) {
        error.textContent = 'Enter your username and password.';
        error.hidden = false;
        return;
      }
      submit.disabled = true;
      submit.textContent = 'Signing in…';
      try {
        const r = await post('/auth/login', { username: user.value.trim(), password: pass.value });
        onSignedIn(r.user, params.get('next'));
      } catch (e) {
        error.textContent = e.status === 401 ? 'Wrong username or password.' : errorText(e);
        error.hidden = false;
        pass.select();
      } finally {
        submit.disabled = false;
        submit.textContent = 'Sign in';
      }
    });
    root.append(
      h(
        'div',
        { class: 'login-page' },
        h(
          'div',
          { class: 'login-card card' },
          h('div', { class: 'login-brand' }, h('img', { src: '/assets/favicon.svg', alt: '', width: 40, height: 40 }), h('span', {}, 'OpsDeck')),
          h('h1', {}, 'Sign in'),
          h('p', { class: 'muted' }, 'Control plane for your AI agents.'),
          pending,
          form,
        ),
      ),
    );
    user.focus();
  },
};
