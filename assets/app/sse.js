// The live stream: one EventSource for the whole app. Frames are {type, data, timestamp}; the browser
// reconnects by itself and sends Last-Event-ID, so the server replays what was missed. A `resync` frame
// (the client fell behind) and every reconnection tell subscribers to refetch over REST.

const listeners = new Set();
const statusListeners = new Set();
let source = null;
let status = 'offline';
let retryTimer = null;
let everOpened = false;

function setStatus(next) {
  status = next;
  for (const fn of statusListeners) fn(status);
}

function dispatch(msg) {
  for (const l of [...listeners]) {
    if (l.match(msg.type)) {
      try {
        l.fn(msg);
      } catch (e) {
        console.warn('event handler failed', e);
      }
    }
  }
}

export function connect() {
  if (source) return;
  source = new EventSource('/api/events');
  source.onopen = () => {
    if (everOpened) dispatch({ type: 'resync', data: { reason: 'reconnected' }, timestamp: Date.now() });
    everOpened = true;
    setStatus('live');
  };
  source.onmessage = (ev) => {
    let msg;
    try {
      msg = JSON.parse(ev.data);
    } catch {
      return;
    }
    if (msg && typeof msg.type === 'string') dispatch(msg);
  };
  source.onerror = () => {
    if (!source) return;
    if (source.readyState === EventSource.CLOSED) {
      // The server refused the stream (e.g. signed out): try again later from scratch.
      source = null;
      setStatus('offline');
      clearTimeout(retryTimer);
      retryTimer = setTimeout(connect, 5000);
    } else {
      setStatus('reconnecting');
    }
  };
}

export function disconnect() {
  clearTimeout(retryTimer);
  if (source) source.close();
  source = null;
  everOpened = false;
  setStatus('offline');
}

/**
 * Subscribes to event types: exact names, prefixes such as `task.*`, or `*`. `resync` frames reach every
 * subscriber. Returns the unsubscribe function.
 */
export function on(types, fn) {
  const list = Array.isArray(types) ? types : [types];
  const match = (type) =>
    type === 'resync' ||
    list.some((t) => t === '*' || t === type || (t.endsWith('.*') && type.startsWith(t.slice(0, -1))));
  const entry = { match, fn };
  listeners.add(entry);
  return () => listeners.delete(entry);
}

export function onStatus(fn) {
  statusListeners.add(fn);
  fn(status);
  return () => statusListeners.delete(fn);
}
