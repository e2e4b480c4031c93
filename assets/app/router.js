// Client-side routing over the History API. Each page module exports
// `default { title, role?, render(root, ctx) → cleanup? }` and is loaded on first visit.

export const routes = [
  { path: '/', title: 'Overview', module: 'overview', group: 'Operate' },
  { path: '/tasks', title: 'Tasks', module: 'tasks', group: 'Operate' },
  { path: '/agents', title: 'Agents', module: 'agents', group: 'Operate' },
  { path: '/sessions', title: 'Sessions', module: 'sessions', group: 'Operate' },
  { path: '/tokens', title: 'Tokens', module: 'tokens', group: 'Operate' },
  { path: '/alerts', title: 'Alerts', module: 'alerts', group: 'Operate' },
  { path: '/notifications', title: 'Notifications', module: 'notifications', group: 'Operate' },
  { path: '/logs', title: 'Logs', module: 'logs', group: 'Operate' },
  { path: '/gateways', title: 'Gateways', module: 'gateways', group: 'Admin', role: 'admin' },
  { path: '/webhooks', title: 'Webhooks', module: 'webhooks', group: 'Admin', role: 'admin' },
  { path: '/users', title: 'Users', module: 'users', group: 'Admin', role: 'admin' },
  { path: '/settings', title: 'Settings', module: 'settings', group: 'Admin', role: 'admin' },
  { path: '/backups', title: 'Backups', module: 'backups', group: 'Admin', role: 'admin' },
  { path: '/scheduler', title: 'Scheduler', module: 'scheduler', group: 'Admin', role: 'admin' },
  { path: '/audit', title: 'Audit log', module: 'audit', group: 'Admin', role: 'admin' },
];

export const loginRoute = { path: '/login', title: 'Sign in', module: 'login' };

export function findRoute(pathname) {
  const clean = pathname.length > 1 ? pathname.replace(/\/+$/, '') : pathname;
  if (clean === '/login') return loginRoute;
  return routes.find((r) => r.path === clean) || null;
}

export async function loadPage(route) {
  const mod = await import(`./pages/${route.module}.js`);
  return mod.default;
}

let listener = null;

/** Registers the function called on every navigation (including back/forward). */
export function onNavigate(fn) {
  listener = fn;
}

export function navigate(to, { replace = false } = {}) {
  const url = new URL(to, window.location.origin);
  const same = url.pathname + url.search === window.location.pathname + window.location.search;
  if (replace || same) window.history.replaceState({}, '', url.pathname + url.search);
  else window.history.pushState({}, '', url.pathname + url.search);
  if (listener) listener();
}

export function startRouter() {
  window.addEventListener('popstate', () => listener && listener());
  document.addEventListener('click', (ev) => {
    if (ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return;
    const a = ev.target.closest('a[href]');
    if (!a || a.target || a.hasAttribute('download')) return;
    const href = a.getAttribute('href');
    if (!href.startsWith('/') || href.startsWith('//') || href.startsWith('/api') || href.startsWith('/assets')) return;
    ev.preventDefault();
    navigate(href);
  });
}
