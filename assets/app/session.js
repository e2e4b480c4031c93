// Who is signed in, and what their role allows.

const RANK = { viewer: 0, operator: 1, admin: 2 };

export const session = { user: null };

export function setUser(user) {
  session.user = user;
}

/** True when the signed-in user has at least `role`. */
export function can(role) {
  const u = session.user;
  return Boolean(u) && (RANK[u.role] ?? -1) >= RANK[role];
}

export function username() {
  return session.user ? session.user.username : '';
}
