// The REST client: JSON in, JSON out, every failure an ApiError with the server's message.

export class ApiError extends Error {
  constructor(status, message, details = []) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.details = Array.isArray(details) ? details : [];
  }

  /** The message plus validation details, for showing to a person. */
  describe() {
    return this.details.length ? `${this.message}: ${this.details.join('; ')}` : this.message;
  }
}

let onUnauthorized = null;

/** Called (once per failing request) when the server answers 401: the session is gone. */
export function setUnauthorizedHandler(fn) {
  onUnauthorized = fn;
}

export async function api(method, path, body) {
  const init = { method, credentials: 'same-origin', headers: { accept: 'application/json' } };
  if (body !== undefined) {
    init.headers['content-type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(`/api${path}`, init);
  } catch {
    throw new ApiError(0, 'The server cannot be reached');
  }
  const text = await res.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
  }
  if (!res.ok) {
    const err = new ApiError(res.status, (data && data.error) || res.statusText || `HTTP ${res.status}`, data && data.details);
    if (res.status === 401 && onUnauthorized && path !== '/auth/login') onUnauthorized(err);
    throw err;
  }
  return data;
}

export const get = (path) => api('GET', path);
export const post = (path, body = {}) => api('POST', path, body);
export const put = (path, body = {}) => api('PUT', path, body);
export const del = (path, body) => api('DELETE', path, body);

/** True when the endpoint itself does not exist on this server (a feature not built or not enabled). */
export function isMissingApi(err) {
  return err instanceof ApiError && ((err.status === 404 && err.message === 'Not found') || err.status === 405);
}

/** `?a=1&b=2` from an object, skipping empty values. */
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}
