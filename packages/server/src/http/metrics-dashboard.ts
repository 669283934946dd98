/**
 * The live metrics dashboard: one page, its script and its style, served
 * as fixed routes by the core (`http/metrics.ts`). No external assets and
 * nothing inline, so the page runs under a strict Content-Security-Policy
 * (`default-src 'none'; script-src 'self'; style-src 'self'; connect-src
 * 'self'`). The script polls the metrics endpoint every second, parses the
 * text format and shows rates (differences between two polls), per-worker
 * queues, HTTP responses by route and status, and latency percentiles
 * estimated from the histogram as Prometheus's `histogram_quantile` does.
 */

/** The page; `script` and `style` are the sibling paths' last segments. */
export function dashboardPage(script: string, style: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Switchboard metrics</title>
<link rel="stylesheet" href="${style}">
<script type="module" src="${script}"></script>
</head>
<body>
<header><h1>Switchboard</h1><span id="status">connecting…</span></header>
<section class="cards">
  <div class="card"><div class="label">Connections open</div><div class="value" id="connections">–</div></div>
  <div class="card"><div class="label">Messages in /s</div><div class="value" id="messages-in">–</div></div>
  <div class="card"><div class="label">Messages out /s</div><div class="value" id="messages-out">–</div></div>
  <div class="card"><div class="label">Bytes in /s</div><div class="value" id="bytes-in">–</div></div>
  <div class="card"><div class="label">Bytes out /s</div><div class="value" id="bytes-out">–</div></div>
  <div class="card"><div class="label">Dropped /s</div><div class="value" id="dropped">–</div></div>
  <div class="card"><div class="label">HTTP requests /s</div><div class="value" id="http-rate">–</div></div>
</section>
<h2>Workers</h2>
<table><thead><tr><th>Worker</th><th>Connections</th><th>Messages in /s</th><th>Queued event bytes</th></tr></thead><tbody id="workers"></tbody></table>
<h2>HTTP</h2>
<table><thead><tr><th>Route</th><th>Responses by status</th><th>Total</th><th>/s</th><th>p50</th><th>p90</th><th>p99</th></tr></thead><tbody id="routes"></tbody></table>
</body>
</html>
`;
}

/** The page's style. */
export const DASHBOARD_CSS = `:root { color-scheme: light dark; --muted: #888; --line: rgba(128,128,128,.25); }
body { font: 14px/1.4 system-ui, sans-serif; margin: 0 auto; padding: 1rem 1.5rem; max-width: 72rem; }
header { display: flex; align-items: baseline; gap: 1rem; }
h1 { font-size: 1.3rem; margin: 0 0 .5rem; }
h2 { font-size: 1rem; margin: 1.5rem 0 .5rem; }
#status { color: var(--muted); }
#status.error { color: #d33; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(10rem, 1fr)); gap: .75rem; }
.card { border: 1px solid var(--line); border-radius: 6px; padding: .6rem .8rem; }
.label { color: var(--muted); font-size: .8rem; }
.value { font-size: 1.4rem; font-variant-numeric: tabular-nums; }
table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
th, td { text-align: left; padding: .3rem .6rem; border-bottom: 1px solid var(--line); }
th { color: var(--muted); font-weight: normal; }
td.num { text-align: right; }
.code { display: inline-block; margin-right: .6rem; }
.c2 { color: #2a2; } .c3 { color: #28a; } .c4 { color: #c80; } .c5 { color: #d33; }
`;

/** The page's script; it polls `metricsPath` (JSON-encoded into it). */
export function dashboardScript(metricsPath: string): string {
  return `// Switchboard metrics dashboard: polls the metrics endpoint every second.
const METRICS = ${JSON.stringify(metricsPath)};
const $ = (id) => document.getElementById(id);
let previous;

/** The text format, parsed: [{ name, labels, value }]. */
function parse(text) {
  const samples = [];
  for (const line of text.split('\\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\\{(.*)\\})? (\\S+)$/.exec(line);
    if (!m) continue;
    const labels = {};
    const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\\]|\\\\.)*)"/g;
    let l;
    while ((l = re.exec(m[2] ?? '')) !== null) {
      labels[l[1]] = l[2].replace(/\\\\(.)/g, (_, c) => (c === 'n' ? '\\n' : c));
    }
    samples.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return samples;
}

const one = (samples, name) => samples.find((s) => s.name === name)?.value ?? 0;
const all = (samples, name) => samples.filter((s) => s.name === name);

function number(n) {
  if (!Number.isFinite(n)) return '–';
  if (Math.abs(n) >= 1e9) return (n / 1e9).toFixed(2) + ' G';
  if (Math.abs(n) >= 1e6) return (n / 1e6).toFixed(2) + ' M';
  if (Math.abs(n) >= 1e4) return (n / 1e3).toFixed(1) + ' k';
  return Number.isInteger(n) ? String(n) : n.toFixed(1);
}

function duration(seconds) {
  if (!Number.isFinite(seconds)) return '–';
  if (seconds < 1e-3) return (seconds * 1e6).toFixed(0) + ' µs';
  if (seconds < 1) return (seconds * 1e3).toFixed(1) + ' ms';
  return seconds.toFixed(2) + ' s';
}

/** A quantile from cumulative buckets [{ le, count }], interpolated within its bucket. */
function quantile(q, buckets) {
  const total = buckets.at(-1)?.count ?? 0;
  if (total === 0) return NaN;
  const rank = q * total;
  let lower = 0;
  let below = 0;
  for (const b of buckets) {
    if (b.count >= rank) {
      if (b.le === Infinity) return lower;
      return lower + (b.le - lower) * ((rank - below) / Math.max(1, b.count - below));
    }
    lower = b.le;
    below = b.count;
  }
  return lower;
}

function cell(row, text, className) {
  const td = document.createElement('td');
  td.textContent = text;
  if (className) td.className = className;
  row.append(td);
  return td;
}

function rate(now, before, name, seconds, labels) {
  if (!before) return NaN;
  const pick = (samples) => {
    const s = samples.find((x) => x.name === name && (!labels || Object.keys(labels).every((k) => x.labels[k] === labels[k])));
    return s?.value ?? 0;
  };
  return Math.max(0, (pick(now.samples) - pick(before.samples)) / seconds);
}

function render(now) {
  const s = now.samples;
  const before = previous;
  const seconds = before ? (now.at - before.at) / 1000 : 1;
  $('connections').textContent = number(one(s, 'switchboard_connections_open'));
  $('messages-in').textContent = number(rate(now, before, 'switchboard_messages_in_total', seconds));
  $('messages-out').textContent = number(rate(now, before, 'switchboard_messages_out_total', seconds));
  $('bytes-in').textContent = number(rate(now, before, 'switchboard_bytes_in_total', seconds));
  $('bytes-out').textContent = number(rate(now, before, 'switchboard_bytes_out_total', seconds));
  $('dropped').textContent = number(rate(now, before, 'switchboard_messages_dropped_total', seconds));
  $('http-rate').textContent = number(rate(now, before, 'switchboard_http_requests_received_total', seconds));

  const workers = $('workers');
  workers.replaceChildren();
  for (const w of all(s, 'switchboard_worker_connections_open')) {
    const id = w.labels.worker;
    const row = document.createElement('tr');
    cell(row, id);
    cell(row, number(w.value), 'num');
    cell(row, number(rate(now, before, 'switchboard_worker_messages_in_total', seconds, { worker: id })), 'num');
    const queued = all(s, 'switchboard_worker_queued_event_bytes').find((q) => q.labels.worker === id);
    cell(row, number(queued?.value ?? 0), 'num');
    workers.append(row);
  }

  const routes = new Map();
  for (const r of all(s, 'switchboard_http_requests_total')) {
    const route = routes.get(r.labels.route) ?? { codes: [], total: 0, buckets: [] };
    route.codes.push([r.labels.code, r.value]);
    route.total += r.value;
    routes.set(r.labels.route, route);
  }
  for (const b of all(s, 'switchboard_http_request_duration_seconds_bucket')) {
    routes.get(b.labels.route)?.buckets.push({ le: b.labels.le === '+Inf' ? Infinity : Number(b.labels.le), count: b.value });
  }
  const body = $('routes');
  body.replaceChildren();
  for (const [name, route] of [...routes].sort((a, b) => b[1].total - a[1].total)) {
    const row = document.createElement('tr');
    cell(row, name);
    const codes = cell(row, '');
    for (const [code, n] of route.codes) {
      const span = document.createElement('span');
      span.className = 'code c' + code[0];
      span.textContent = code + ': ' + number(n);
      codes.append(span);
    }
    cell(row, number(route.total), 'num');
    let perSecond = NaN;
    if (before) {
      const old = all(before.samples, 'switchboard_http_requests_total').filter((x) => x.labels.route === name);
      perSecond = Math.max(0, (route.total - old.reduce((sum, x) => sum + x.value, 0)) / seconds);
    }
    cell(row, number(perSecond), 'num');
    route.buckets.sort((a, b) => a.le - b.le);
    for (const q of [0.5, 0.9, 0.99]) cell(row, duration(quantile(q, route.buckets)), 'num');
    body.append(row);
  }
}

async function poll() {
  try {
    const response = await fetch(METRICS, { cache: 'no-store' });
    if (!response.ok) throw new Error('HTTP ' + response.status);
    const now = { at: performance.now(), samples: parse(await response.text()) };
    render(now);
    previous = now;
    $('status').textContent = 'updated ' + new Date().toLocaleTimeString();
    $('status').className = '';
  } catch (error) {
    $('status').textContent = 'cannot read ' + METRICS + ': ' + error.message;
    $('status').className = 'error';
  }
  setTimeout(poll, 1000);
}

poll();
`;
}
