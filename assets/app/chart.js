// Small SVG charts (no library): a bar chart over labelled points, and a horizontal share bar.

import { h } from './ui.js';

/**
 * points: [{label, value, title?}]; format(value) for the axis and tooltips.
 * The SVG scales to its container's width through its viewBox.
 */
export function barChart(points, { format = String, height = 220, ariaLabel = 'Chart' } = {}) {
  const W = 720;
  const H = height;
  const pad = { top: 12, right: 12, bottom: 28, left: 56 };
  const innerW = W - pad.left - pad.right;
  const innerH = H - pad.top - pad.bottom;
  const max = Math.max(0, ...points.map((p) => p.value)) || 1;
  const svg = h('svg:svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img', 'aria-label': ariaLabel });
  // Grid lines and axis labels at 0, 50 %, 100 %.
  for (const f of [0, 0.5, 1]) {
    const y = pad.top + innerH * (1 - f);
    svg.append(h('svg:line', { x1: pad.left, x2: W - pad.right, y1: y, y2: y, class: 'chart-grid' }));
    const t = h('svg:text', { x: pad.left - 6, y: y + 4, class: 'chart-axis', 'text-anchor': 'end' });
    t.textContent = format(max * f);
    svg.append(t);
  }
  const n = Math.max(points.length, 1);
  const slot = innerW / n;
  const bw = Math.max(2, Math.min(40, slot * 0.7));
  const every = Math.ceil(n / 8);
  points.forEach((p, i) => {
    const bh = (p.value / max) * innerH;
    const x = pad.left + slot * i + (slot - bw) / 2;
    const rect = h('svg:rect', { x, y: pad.top + innerH - bh, width: bw, height: Math.max(bh, p.value > 0 ? 1 : 0), rx: 2, class: 'chart-bar' });
    const title = h('svg:title', {});
    title.textContent = p.title || `${p.label}: ${format(p.value)}`;
    rect.append(title);
    svg.append(rect);
    if (i % every === 0) {
      const t = h('svg:text', { x: pad.left + slot * i + slot / 2, y: H - 8, class: 'chart-axis', 'text-anchor': 'middle' });
      t.textContent = p.label;
      svg.append(t);
    }
  });
  return h('div', { class: 'chart-wrap' }, svg);
}

/** A single stacked bar: parts [{label, value, cls}] with a legend. */
export function shareBar(parts) {
  const total = parts.reduce((s, p) => s + p.value, 0);
  const bar = h('div', { class: 'share-bar', role: 'img', 'aria-label': parts.map((p) => `${p.label} ${p.value}`).join(', ') });
  for (const p of parts) {
    if (!p.value) continue;
    const seg = h('span', { class: ['share-seg', p.cls], title: `${p.label}: ${p.value}` });
    seg.style.flexGrow = String(p.value);
    bar.append(seg);
  }
  if (!total) bar.append(h('span', { class: 'share-seg share-empty' }));
  const legend = h(
    'ul',
    { class: 'legend' },
    parts.map((p) => h('li', {}, h('span', { class: ['dot', p.cls] }), `${p.label} `, h('strong', {}, String(p.value)))),
  );
  return h('div', { class: 'share' }, bar, legend);
}
