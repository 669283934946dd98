// Hand-written SVG charts (no dependencies): the broadcast study's latency
// against delivered rate, one chart per room size, and a bar chart of echo
// throughput. Plain SVG 1.1 with inline styles, so a browser, GitHub's
// Markdown view and an image viewer all show it the same way.
import { si } from './format.mjs';

// Fixed per server so a server keeps its colour and marker across charts.
export const SERVER_STYLE = {
  switchboard: { color: '#d62728', marker: 'circle' },
  uws: { color: '#1f77b4', marker: 'square' },
  ws: { color: '#2ca02c', marker: 'diamond' },
  socketio: { color: '#9467bd', marker: 'triangle' },
  sockjs: { color: '#8c564b', marker: 'triangle-down' },
  tokio: { color: '#ff7f0e', marker: 'cross' },
  // Switchboard's SockJS services, and both SockJS servers over
  // xhr-streaming: four SockJS lines that one chart may show together.
  'switchboard-sockjs': { color: '#e377c2', marker: 'circle' },
  'sockjs-xhr-streaming': { color: '#bcbd22', marker: 'triangle-down' },
  'switchboard-sockjs-xhr-streaming': { color: '#7b4173', marker: 'square' },
  // The HTTP suite's peers (uws and switchboard as above).
  hyperexpress: { color: '#17becf', marker: 'diamond' },
  fastify: { color: '#2ca02c', marker: 'triangle' },
  node: { color: '#7f7f7f', marker: 'triangle-down' },
  hyper: { color: '#ff7f0e', marker: 'cross' },
};
const FALLBACK = ['#17becf', '#7f7f7f', '#bcbd22', '#e377c2'];

export function styleFor(name, index = 0) {
  return SERVER_STYLE[name] ?? { color: FALLBACK[index % FALLBACK.length], marker: 'circle' };
}

function esc(text) {
  return String(text).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

const n2 = (v) => Math.round(v * 100) / 100;

function marker(kind, x, y, color, size = 4) {
  const s = size;
  switch (kind) {
    case 'square':
      return `<rect x="${n2(x - s)}" y="${n2(y - s)}" width="${2 * s}" height="${2 * s}" fill="${color}"/>`;
    case 'diamond':
      return `<path d="M${n2(x)},${n2(y - s - 1)} L${n2(x + s + 1)},${n2(y)} L${n2(x)},${n2(y + s + 1)} L${n2(x - s - 1)},${n2(y)} Z" fill="${color}"/>`;
    case 'triangle':
      return `<path d="M${n2(x)},${n2(y - s - 1)} L${n2(x + s + 1)},${n2(y + s)} L${n2(x - s - 1)},${n2(y + s)} Z" fill="${color}"/>`;
    case 'triangle-down':
      return `<path d="M${n2(x)},${n2(y + s + 1)} L${n2(x + s + 1)},${n2(y - s)} L${n2(x - s - 1)},${n2(y - s)} Z" fill="${color}"/>`;
    case 'cross':
      return `<path d="M${n2(x - s)},${n2(y - s)} L${n2(x + s)},${n2(y + s)} M${n2(x - s)},${n2(y + s)} L${n2(x + s)},${n2(y - s)}" stroke="${color}" stroke-width="2.5"/>`;
    default:
      return `<circle cx="${n2(x)}" cy="${n2(y)}" r="${s}" fill="${color}"/>`;
  }
}

/** Log-scale ticks at 1, 2 and 5 × 10^k inside [lo, hi] (only decades when the range is wide). */
function logTicks(lo, hi) {
  const ticks = [];
  const wide = Math.log10(hi / lo) > 4;
  for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
    for (const m of wide ? [1] : [1, 2, 5]) {
      const v = m * 10 ** e;
      if (v >= lo * 0.999 && v <= hi * 1.001) ticks.push({ value: v, major: m === 1 });
    }
  }
  return ticks;
}

/** "Nice" linear ticks from 0 to at least max. */
function linearTicks(max) {
  if (!(max > 0)) return [0, 1];
  const raw = max / 5;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw);
  const ticks = [];
  for (let v = 0; v <= max + step * 0.999; v += step) ticks.push(v);
  return ticks;
}

/** Tick labels without trailing zeros: 1k, 2.5M, 0.01, 200. */
function tickLabel(v, { plain = false } = {}) {
  const trim = (t) => t.replace(/(\.\d*?)0+(?=[a-zA-Z]*$)/, '$1').replace(/\.(?=[a-zA-Z]*$)/, '');
  return trim(v >= 1000 && !plain ? si(v) : String(Number(v.toPrecision(3))));
}

const FONT = 'font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif"';

function frame(width, height, body) {
  return (
    `<?xml version="1.0" encoding="UTF-8"?>\n` +
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" ${FONT} font-size="12">\n` +
    `<rect width="${width}" height="${height}" fill="#ffffff"/>\n${body}</svg>\n`
  );
}

function legend(entries, x, y) {
  let out = '';
  entries.forEach((e, i) => {
    const ly = y + i * 20;
    out += `<line x1="${x}" y1="${ly}" x2="${x + 24}" y2="${ly}" stroke="${e.color}" stroke-width="2"/>`;
    out += marker(e.marker, x + 12, ly, e.color);
    out += `<text x="${x + 32}" y="${ly + 4}" fill="#222">${esc(e.label)}</text>\n`;
  });
  return out;
}

/**
 * Mean latency (ms, log y) against delivered messages/s (log x: the rate
 * steps are geometric) for one room size, one line per server, with the
 * latency limit that defines the saturation rate.
 * series: [{ name, label, points: [{ x: delivered/s, y: mean ms }] }]
 */
export function roomChart({ title, subtitle, series, limitMs }) {
  const width = 820;
  const height = 500;
  const m = { left: 78, right: 190, top: 62, bottom: 58 };
  const pw = width - m.left - m.right;
  const ph = height - m.top - m.bottom;
  const points = series.flatMap((s) => s.points).filter((p) => p.x > 0 && p.y > 0);
  const xs = points.map((p) => p.x);
  const ys = points.map((p) => p.y).concat([limitMs]);
  const xlo = 10 ** Math.floor(Math.log10(Math.min(...(xs.length ? xs : [1e4])) * 0.9));
  const xhi = 10 ** Math.ceil(Math.log10(Math.max(...(xs.length ? xs : [1e7])) * 1.1));
  const ylo = 10 ** Math.floor(Math.log10(Math.min(...ys) * 0.9));
  const yhi = 10 ** Math.ceil(Math.log10(Math.max(...ys) * 1.1));
  const sx = (v) => m.left + ((Math.log10(v) - Math.log10(xlo)) / (Math.log10(xhi) - Math.log10(xlo))) * pw;
  const sy = (v) => m.top + ph - ((Math.log10(v) - Math.log10(ylo)) / (Math.log10(yhi) - Math.log10(ylo))) * ph;

  let body = '';
  body += `<text x="${m.left}" y="24" font-size="16" font-weight="600" fill="#111">${esc(title)}</text>\n`;
  if (subtitle) body += `<text x="${m.left}" y="44" fill="#555">${esc(subtitle)}</text>\n`;
  // Grid and ticks.
  for (const t of logTicks(xlo, xhi)) {
    const x = n2(sx(t.value));
    body += `<line x1="${x}" y1="${m.top}" x2="${x}" y2="${m.top + ph}" stroke="${t.major ? '#d0d0d0' : '#ececec'}"/>`;
    body += `<text x="${x}" y="${m.top + ph + 18}" text-anchor="middle" fill="#333">${esc(tickLabel(t.value))}</text>\n`;
  }
  for (const t of logTicks(ylo, yhi)) {
    const y = n2(sy(t.value));
    body += `<line x1="${m.left}" y1="${y}" x2="${m.left + pw}" y2="${y}" stroke="${t.major ? '#d0d0d0' : '#ececec'}"/>`;
    body += `<text x="${m.left - 8}" y="${y + 4}" text-anchor="end" fill="#333">${esc(tickLabel(t.value, { plain: true }))}</text>\n`;
  }
  body += `<rect x="${m.left}" y="${m.top}" width="${pw}" height="${ph}" fill="none" stroke="#888"/>\n`;
  // The latency limit.
  const ly = n2(sy(limitMs));
  body += `<line x1="${m.left}" y1="${ly}" x2="${m.left + pw}" y2="${ly}" stroke="#b00" stroke-width="1.5" stroke-dasharray="6 4"/>`;
  // Labelled at the left, where the curves are still low (they cross the line on the right).
  body += `<text x="${m.left + 6}" y="${ly - 6}" fill="#b00">${limitMs} ms (saturation limit)</text>\n`;
  // Axis labels.
  body += `<text x="${m.left + pw / 2}" y="${height - 14}" text-anchor="middle" fill="#111">delivered messages/s (log scale)</text>\n`;
  body += `<text transform="translate(20 ${m.top + ph / 2}) rotate(-90)" text-anchor="middle" fill="#111">mean latency, ms (log scale)</text>\n`;
  // Lines.
  const entries = [];
  series.forEach((s, i) => {
    const style = styleFor(s.name, i);
    const pts = s.points.filter((p) => p.x > 0 && p.y > 0).sort((a, b) => a.x - b.x);
    entries.push({ label: s.label, ...style });
    if (pts.length === 0) return;
    const d = pts.map((p, j) => `${j ? 'L' : 'M'}${n2(sx(p.x))},${n2(sy(p.y))}`).join(' ');
    body += `<path d="${d}" fill="none" stroke="${style.color}" stroke-width="2" stroke-linejoin="round"/>\n`;
    for (const p of pts) body += marker(style.marker, sx(p.x), sy(p.y), style.color);
    body += '\n';
  });
  body += legend(entries, m.left + pw + 20, m.top + 10);
  return frame(width, height, body);
}

/**
 * Grouped bars in stacked panels, each with its own linear y axis (echo
 * rates at 32 B and 16 KiB differ by orders of magnitude; a shared or log
 * axis would hide the differences between servers that matter).
 * panels: [{ title, groups: [{ lines: [label lines] }], values: { server: [number|null per group] } }]
 * series: [{ name, label }]
 */
export function barChart({ title, subtitle, yLabel, panels, series }) {
  const barW = 11;
  const groupGap = 22;
  const groupW = series.length * barW + groupGap;
  const m = { left: 78, right: 170, top: 62, bottom: 20 };
  const panelH = 230;
  const panelGap = 78; // room for the group labels and the next panel's title
  const maxGroups = Math.max(1, ...panels.map((p) => p.groups.length));
  const pw = Math.max(520, maxGroups * groupW);
  const width = m.left + pw + m.right;
  const height = m.top + panels.length * (panelH + panelGap) - panelGap + 44 + m.bottom;

  let body = '';
  body += `<text x="${m.left}" y="24" font-size="16" font-weight="600" fill="#111">${esc(title)}</text>\n`;
  if (subtitle) body += `<text x="${m.left}" y="44" fill="#555">${esc(subtitle)}</text>\n`;
  panels.forEach((panel, pi) => {
    const top0 = m.top + pi * (panelH + panelGap) + (panel.title ? 18 : 0);
    const ph = panelH - (panel.title ? 18 : 0);
    if (panel.title) body += `<text x="${m.left}" y="${top0 - 8}" font-weight="600" fill="#333">${esc(panel.title)}</text>\n`;
    const max = Math.max(0, ...series.flatMap((s) => (panel.values[s.name] ?? []).filter((v) => Number.isFinite(v))));
    const ticks = linearTicks(max);
    const top = ticks.at(-1) || 1;
    const sy = (v) => top0 + ph - (v / top) * ph;
    for (const t of ticks) {
      const y = n2(sy(t));
      body += `<line x1="${m.left}" y1="${y}" x2="${m.left + pw}" y2="${y}" stroke="#e2e2e2"/>`;
      body += `<text x="${m.left - 8}" y="${y + 4}" text-anchor="end" fill="#333">${esc(tickLabel(t))}</text>\n`;
    }
    const offset = (pw - panel.groups.length * groupW) / 2 + groupGap / 2;
    panel.groups.forEach((g, gi) => {
      const gx = m.left + offset + gi * groupW;
      series.forEach((s, si2) => {
        const v = panel.values[s.name]?.[gi];
        if (!Number.isFinite(v)) return;
        const style = styleFor(s.name, si2);
        const y = sy(v);
        body += `<rect x="${n2(gx + si2 * barW)}" y="${n2(y)}" width="${barW - 1}" height="${n2(top0 + ph - y)}" fill="${style.color}"><title>${esc(`${s.label}: ${si(v)}`)}</title></rect>`;
      });
      const cx = n2(gx + (series.length * barW) / 2);
      g.lines.forEach((line, li) => {
        body += `<text x="${cx}" y="${top0 + ph + 16 + li * 14}" text-anchor="middle" font-size="11" fill="#333">${esc(line)}</text>`;
      });
      body += '\n';
    });
    body += `<rect x="${m.left}" y="${top0}" width="${pw}" height="${ph}" fill="none" stroke="#888"/>\n`;
    body += `<text transform="translate(20 ${top0 + ph / 2}) rotate(-90)" text-anchor="middle" fill="#111">${esc(yLabel)}</text>\n`;
  });
  let ly = m.top + 10;
  series.forEach((s, i) => {
    const style = styleFor(s.name, i);
    body += `<rect x="${m.left + pw + 20}" y="${ly - 6}" width="14" height="12" fill="${style.color}"/>`;
    body += `<text x="${m.left + pw + 40}" y="${ly + 4}" fill="#222">${esc(s.label)}</text>\n`;
    ly += 20;
  });
  return frame(width, height, body);
}
