// Contract-shaped answers (spec/interface.md) for APIs other engineers are still building. Only the
// "built ahead of its API" test uses them, through Playwright's request interception; every other test
// talks to the real server.

const now = Date.now();
const sec = Math.floor(now / 1000);
const stats = (tokens, cost, requests) => ({ totalTokens: tokens, totalCost: cost, requestCount: requests, avgTokensPerRequest: Math.round(tokens / requests), avgCostPerRequest: cost / requests });

export const calls = [];

const fixtures = {
  'GET /api/sessions': () => ({
    sessions: [
      { id: 'atlas:main', key: 'main', agent: 'atlas', kind: 'chat', age: '5m', model: 'claude-sonnet-4', tokens: '12k/200k (6%)', channel: 'discord', flags: [], active: true, startTime: sec - 3600, lastActivity: sec - 300, source: 'gateway' },
      { id: 'b7d1c2e0', key: 'b7d1c2e0', agent: 'hermes', kind: 'claude-code', age: '2h', model: 'claude-opus-4-5', tokens: '1.5m/200k (750%)', channel: 'local', flags: [], active: false, startTime: sec - 9000, lastActivity: sec - 7200, source: 'local', userMessages: 4, assistantMessages: 9, toolUses: 12, estimatedCost: 1.25, lastUserPrompt: 'fix the tests' },
    ],
  }),
  'POST /api/sessions/control': () => ({ success: true }),
  'GET /api/tokens?stats': () => ({
    summary: stats(48200, 0.3812, 14),
    models: { 'claude-sonnet-4': stats(30000, 0.09, 8), 'claude-opus-4-5': stats(18200, 0.273, 6) },
    sessions: { 'atlas:main': stats(30000, 0.09, 8) },
    agents: { atlas: stats(30000, 0.09, 8), hermes: stats(18200, 0.273, 6) },
    timeframe: 'day',
    recordCount: 14,
  }),
  'GET /api/tokens?trends': () => ({
    trends: Array.from({ length: 24 }, (_, i) => ({ timestamp: new Date(now - (23 - i) * 3600e3).toISOString().slice(0, 13) + ':00:00Z', tokens: 1000 + ((i * 737) % 4000), cost: 0.003 * (1 + ((i * 7) % 11)), requests: 1 + (i % 4) })),
    timeframe: 'day',
  }),
  'GET /api/tokens?agent-costs': () => ({
    agents: {
      atlas: { stats: stats(30000, 0.09, 8), models: { 'claude-sonnet-4': stats(30000, 0.09, 8) }, sessions: ['atlas:main'], timeline: [{ date: '2026-11-19', cost: 0.02, tokens: 7000 }, { date: '2026-11-20', cost: 0.07, tokens: 23000 }] },
    },
    timeframe: 'week',
    recordCount: 8,
  }),
  'GET /api/alerts': () => ({
    rules: [
      { id: 1, name: 'Agents offline', description: 'More than one agent offline', enabled: true, entity_type: 'agent', condition_field: 'status', condition_operator: 'count_above', condition_value: 'offline:1', action_type: 'notification', action_config: { recipient: 'admin' }, cooldown_minutes: 60, last_triggered_at: sec - 600, trigger_count: 3, created_by: 'admin', created_at: sec - 86400 },
      { id: 2, name: 'Critical tasks', description: '', enabled: false, entity_type: 'task', condition_field: 'priority', condition_operator: 'equals', condition_value: 'critical', action_type: 'notification', action_config: {}, cooldown_minutes: 30, last_triggered_at: null, trigger_count: 0, created_by: 'admin', created_at: sec - 3600 },
    ],
  }),
  'POST /api/alerts': (body) => (body && body.action === 'evaluate'
    ? { evaluated: 1, triggered: 1, results: [{ rule_id: 1, rule_name: 'Agents offline', triggered: true, reason: '2 agents offline (threshold 1)' }] }
    : { rule: { id: 3, ...body } }),
  'PUT /api/alerts': () => ({ success: true }),
  'GET /api/logs?sources': () => ({ sources: ['gateway', 'opsdeck'] }),
  'GET /api/logs?recent': () => ({
    logs: [
      { id: 'l1', timestamp: now - 5000, level: 'error', source: 'gateway', message: 'session atlas:main lost its channel', session: 'atlas:main' },
      { id: 'l2', timestamp: now - 15000, level: 'info', source: 'opsdeck', message: 'Browser test started' },
      { id: 'l3', timestamp: now - 25000, level: 'warn', source: 'gateway', message: 'slow response from model (4.2 s)' },
    ],
  }),
  'GET /api/logs?tail': () => ({ logs: [] }),
  'GET /api/settings': () => {
    const settings = [
      { key: 'retention.logs_days', value: '30', description: 'Days of logs to keep', category: 'retention', updated_by: null, updated_at: null, is_default: true },
      { key: 'retention.audit_log_days', value: '365', description: 'Days of audit log to keep', category: 'retention', updated_by: 'admin', updated_at: sec - 3600, is_default: false },
      { key: 'general.site_name', value: 'OpsDeck', description: 'Name shown in the dashboard', category: 'general', updated_by: null, updated_at: null, is_default: true },
    ];
    return { settings, grouped: { retention: settings.slice(0, 2), general: settings.slice(2) } };
  },
  'PUT /api/settings': (body) => ({ updated: Object.keys(body.settings), count: Object.keys(body.settings).length }),
  'GET /api/backup': () => ({ backups: [{ name: 'svc-backup-2026-11-20_03-00-00.db', size: 1843200, created_at: sec - 86400 }], dir: '/var/lib/opsdeck/backups' }),
  'POST /api/backup': () => ({ success: true, backup: { name: 'svc-backup-2026-11-21_06-00-00.db', size: 1901000, created_at: sec } }),
  'GET /api/scheduler': () => ({
    tasks: [
      { id: 'auto_backup', name: 'Automatic backup', enabled: false, lastRun: null, nextRun: now + 3600e3, running: false, lastResult: null },
      { id: 'agent_heartbeat', name: 'Agent heartbeat check', enabled: true, lastRun: now - 120e3, nextRun: now + 180e3, running: false, lastResult: { ok: true, message: 'Marked 0 agents offline', timestamp: now - 120e3 } },
      { id: 'webhook_retry', name: 'Webhook retries', enabled: true, lastRun: now - 30e3, nextRun: now + 30e3, running: false, lastResult: { ok: true, message: '0 retried', timestamp: now - 30e3 } },
    ],
  }),
  'POST /api/scheduler': (body) => ({ ok: true, message: `Ran ${body.task_id}` }),
};

function key(method, url) {
  const u = new URL(url);
  let path = u.pathname;
  if (/^\/api\/sessions\/[^/]+\/control$/.test(path)) path = '/api/sessions/control';
  const action = u.searchParams.get('action');
  if (path === '/api/tokens') return `${method} ${path}?${action || 'list'}`;
  if (path === '/api/logs') return `${method} ${path}?${action || 'recent'}`;
  return `${method} ${path}`;
}

/** Installs the fixtures on a browser context. */
export async function installFixtures(context) {
  await context.route(/\/api\/(sessions|tokens|alerts|logs|settings|backup|scheduler)(\/|\?|$)/, async (route) => {
    const req = route.request();
    const k = key(req.method(), req.url());
    const f = fixtures[k];
    if (!f) return route.fulfill({ status: 404, json: { error: 'Not found' } });
    let body = null;
    try {
      body = req.postDataJSON();
    } catch {
      body = null;
    }
    calls.push({ key: k, body });
    return route.fulfill({ status: 200, json: f(body) });
  });
}
