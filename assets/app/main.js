// Boot: find out who is signed in, draw the shell (navigation, user, live indicator) and route.

import { get, post, setUnauthorizedHandler } from './api.js';
import { findRoute, loadPage, navigate, onNavigate, routes, startRouter } from './router.js';
import { connect, disconnect, on, onStatus } from './sse.js';
import { can, session, setUser } from './session.js';
import { clear, errorBox, h, loading, mount, toast } from './ui.js';

const root = document.getElementById('app');
let cleanup = null;
let shell = null;
let renderSeq = 0;

function currentPath() {
  return window.location.pathname + window.location.search;
}

function goToLogin() {
  const here = currentPath();
  const next = window.location.pathname === '/login' ? '' : `?next=${encodeURIComponent(here)}`;
  setUser(null);
  disconnect();
  shell = null;
  navigate(`/login${next}`, { replace: true });
}

setUnauthorizedHandler(() => {
  if (session.user) {
    toast('Your session has ended. Please sign in again.', 'error');
    goToLogin();
  }
});

function buildShell() {
  const nav = h('nav', { class: 'nav', 'aria-label': 'Main' });
  const groups = {};
  for (const r of routes) {
    if (r.role && !can(r.role)) continue;
    if (!groups[r.group]) {
      groups[r.group] = h('ul', { class: 'nav-list' });
      nav.append(h('div', { class: 'nav-group' }, h('div', { class: 'nav-heading' }, r.group), groups[r.group]));
    }
    const badgeEl = r.path === '/notifications' ? h('span', { class: 'nav-count', hidden: true, id: 'unread-count' }) : null;
    groups[r.group].append(h('li', {}, h('a', { href: r.path, class: 'nav-link', dataset: { path: r.path } }, r.title, badgeEl)));
  }
  const live = h('span', { class: 'live-dot', title: 'Live updates' });
  const liveText = h('span', { class: 'live-text' }, 'offline');
  onStatus((s) => {
    live.dataset.status = s;
    liveText.textContent = s === 'live' ? 'Live' : s === 'reconnecting' ? 'Reconnecting…' : 'Offline';
  });
  const menuBtn = h('button', { type: 'button', class: 'icon-btn menu-btn', 'aria-label': 'Menu', 'aria-expanded': 'false' }, '☰');
  const side = h(
    'aside',
    { class: 'sidebar' },
    h('a', { href: '/', class: 'brand' }, h('img', { src: '/assets/favicon.svg', alt: '', width: 26, height: 26 }), h('span', {}, 'OpsDeck')),
    nav,
  );
  menuBtn.addEventListener('click', () => {
    const open = document.body.classList.toggle('nav-open');
    menuBtn.setAttribute('aria-expanded', String(open));
  });
  const user = session.user;
  const signOut = h('button', { type: 'button', class: 'btn btn-sm btn-ghost', onclick: logout }, 'Sign out');
  const top = h(
    'div',
    { class: 'topbar' },
    menuBtn,
    h('a', { href: '/', class: 'brand brand-top' }, 'OpsDeck'),
    h('div', { class: 'topbar-spacer' }),
    h('div', { class: 'live', 'aria-live': 'polite' }, live, liveText),
    h('div', { class: 'user-chip', title: `${user.username} (${user.role})` }, h('span', { class: 'user-name' }, user.display_name || user.username), h('span', { class: 'role-tag' }, user.role)),
    signOut,
  );
  const main = h('main', { class: 'content', id: 'main' });
  const scrim = h('div', { class: 'scrim', onclick: () => document.body.classList.remove('nav-open') });
  mount(root, h('div', { class: 'layout' }, side, scrim, h('div', { class: 'main-col' }, top, main)));
  shell = { main, nav };
  refreshUnread();
}

let unreadTimer = null;
export function refreshUnread() {
  clearTimeout(unreadTimer);
  unreadTimer = setTimeout(async () => {
    const el = document.getElementById('unread-count');
    if (!el) return;
    try {
      const r = await get('/notifications?unread_only=true&limit=1');
      el.textContent = r.unreadCount > 99 ? '99+' : String(r.unreadCount);
      el.hidden = !r.unreadCount;
    } catch {
      el.hidden = true;
    }
  }, 150);
}
window.addEventListener('opsdeck:notifications-changed', refreshUnread);
on(['notification.*'], refreshUnread);

async function logout() {
  try {
    await post('/auth/logout');
  } catch {
    // Signed out either way.
  }
  setUser(null);
  disconnect();
  shell = null;
  navigate('/login', { replace: true });
}

async function render() {
  const seq = ++renderSeq;
  if (cleanup) {
    try {
      cleanup();
    } catch {
      // A page's cleanup must not block navigation.
    }
    cleanup = null;
  }
  document.body.classList.remove('nav-open');
  const route = findRoute(window.location.pathname);
  const params = new URLSearchParams(window.location.search);

  if (route && route.module === 'login') {
    if (session.user) {
      navigate(params.get('next') || '/', { replace: true });
      return;
    }
    shell = null;
    const page = await loadPage(route);
    if (seq !== renderSeq) return;
    document.title = 'Sign in · OpsDeck';
    clear(root);
    cleanup = page.render(root, { params, onSignedIn }) || null;
    return;
  }

  if (!session.user) {
    mount(root, loading());
    try {
      const me = await get('/auth/me');
      setUser(me.user);
    } catch {
      if (seq === renderSeq) goToLogin();
      return;
    }
    if (seq !== renderSeq) return;
  }
  if (!shell) {
    buildShell();
    connect();
  }
  for (const a of shell.nav.querySelectorAll('a.nav-link')) {
    if (route && a.dataset.path === route.path) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const main = shell.main;
  if (!route) {
    document.title = 'Not found · OpsDeck';
    mount(main, h('h1', {}, 'Page not found'), h('p', {}, 'There is no such page. ', h('a', { href: '/' }, 'Go to the overview')));
    return;
  }
  document.title = `${route.title} · OpsDeck`;
  if (route.role && !can(route.role)) {
    mount(main, h('h1', {}, route.title), h('div', { class: 'notice' }, `This page needs the ${route.role} role. You are signed in as ${session.user.role}.`));
    return;
  }
  mount(main, loading());
  let page;
  try {
    page = await loadPage(route);
  } catch (e) {
    if (seq === renderSeq) mount(main, h('h1', {}, route.title), errorBox(e));
    return;
  }
  if (seq !== renderSeq) return;
  clear(main);
  main.scrollTop = 0;
  window.scrollTo(0, 0);
  cleanup = page.render(main, { params, navigate }) || null;
}

function onSignedIn(user, next) {
  setUser(user);
  navigate(next && next.startsWith('/') && !next.startsWith('//') ? next : '/', { replace: true });
}

onNavigate(render);
startRouter();
render();
