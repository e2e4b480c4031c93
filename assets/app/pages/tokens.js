// /tokens — cost and tokens over time, per model and per agent, a timeframe switch, CSV/JSON export.

import { get, query } from '../api.js';
import { barChart } from '../chart.js';
import { on } from '../sse.js';
import { debounce, empty, failure, fmtCost, fmtNum, h, loading, mount, pageHeader, stat, table } from '../ui.js';

const FRAMES = [['hour', 'Hour'], ['day', '24 h'], ['week', '7 days'], ['month', '30 days'], ['all', 'All']];

function statsTable(entries, name) {
  return table(
    [
      { label: name, render: (e) => e[0], class: 'nowrap' },
      { label: 'Requests', render: (e) => fmtNum(e[1].requestCount), class: 'num' },
      { label: 'Tokens', render: (e) => fmtNum(e[1].totalTokens), class: 'num' },
      { label: 'Avg / request', render: (e) => fmtNum(e[1].avgTokensPerRequest), class: 'num' },
      { label: 'Cost', render: (e) => fmtCost(e[1].totalCost), class: 'num' },
    ],
    entries.sort((a, b) => b[1].totalCost - a[1].totalCost || b[1].totalTokens - a[1].totalTokens),
    { empty: 'No usage in this timeframe.' },
  );
}

export default {
  title: 'Tokens',
  render(root, { params }) {
    let frame = params.get('timeframe') || 'day';
    const switcher = h('div', { class: 'segmented', role: 'group', 'aria-label': 'Timeframe' });
    const exportLinks = h('div', { class: 'row' });
    const body = h('div', {}, loading());
    root.append(pageHeader('Token usage', 'What your agents cost, by model and by agent', exportLinks), h('div', { class: 'toolbar' }, switcher), body);

    const drawSwitcher = () => {
      mount(switcher, FRAMES.map(([k, text]) => h('button', { type: 'button', class: 'seg', 'aria-pressed': String(k === frame), onclick: () => { frame = k; drawSwitcher(); load(); } }, text)));
      mount(
        exportLinks,
        h('a', { class: 'btn', href: `/api/tokens${query({ action: 'export', timeframe: frame, format: 'csv' })}`, download: '' }, 'Export CSV'),
        h('a', { class: 'btn', href: `/api/tokens${query({ action: 'export', timeframe: frame, format: 'json' })}`, download: '' }, 'Export JSON'),
      );
    };

    async function series() {
      if (frame === 'hour' || frame === 'day') {
        const r = await get('/tokens?action=trends');
        let points = r.trends || [];
        if (frame === 'hour') points = points.slice(-2);
        return points.map((p) => ({ label: new Date(p.timestamp).getHours().toString().padStart(2, '0') + 'h', value: p.cost, title: `${p.timestamp}: ${fmtCost(p.cost)}, ${fmtNum(p.tokens)} tokens, ${p.requests} requests` }));
      }
      const r = await get(`/tokens${query({ action: 'agent-costs', timeframe: frame })}`);
      const byDate = new Map();
      for (const a of Object.values(r.agents || {})) {
        for (const d of a.timeline || []) {
          const cur = byDate.get(d.date) || { cost: 0, tokens: 0 };
          cur.cost += d.cost;
          cur.tokens += d.tokens;
          byDate.set(d.date, cur);
        }
      }
      return [...byDate.entries()].sort((a, b) => (a[0] < b[0] ? -1 : 1)).map(([date, v]) => ({ label: date.slice(5), value: v.cost, title: `${date}: ${fmtCost(v.cost)}, ${fmtNum(v.tokens)} tokens` }));
    }

    async function load() {
      try {
        const [stats, points] = await Promise.all([get(`/tokens${query({ action: 'stats', timeframe: frame })}`), series()]);
        const s = stats.summary || {};
        mount(
          body,
          h('section', { class: 'grid stats' }, stat('Cost', fmtCost(s.totalCost || 0)), stat('Tokens', fmtNum(s.totalTokens || 0)), stat('Requests', fmtNum(s.requestCount || 0)), stat('Avg cost / request', fmtCost(s.avgCostPerRequest || 0))),
          h('section', { class: 'card panel' }, h('h2', {}, 'Cost over time'), points.length ? barChart(points, { format: (v) => fmtCost(v), ariaLabel: 'Cost over time' }) : empty('No usage in this timeframe.')),
          h('div', { class: 'grid two' }, h('section', { class: 'card panel' }, h('h2', {}, 'By model'), statsTable(Object.entries(stats.models || {}), 'Model')), h('section', { class: 'card panel' }, h('h2', {}, 'By agent'), statsTable(Object.entries(stats.agents || {}), 'Agent'))),
        );
      } catch (e) {
        mount(body, failure(e, 'Token usage'));
      }
    }

    drawSwitcher();
    load();
    return on(['token.*', 'tokens.*'], debounce(load, 500));
  },
};
