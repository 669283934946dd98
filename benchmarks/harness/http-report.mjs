// The HTTP suite's results page (http-results.md), its chart (http.svg),
// the one-line outcome of a run, and the short Switchboard-vs-peers table
// printed at the end of a run.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { barChart } from './charts.mjs';
import { mib, ms, pct, ratio, si } from './format.mjs';
import { byConfig, cellMark, comparisonTable, failedCell, resultsHeader, runsOf, table } from './report.mjs';
import { HTTP_SCENARIO_NAMES, httpConfigLabel } from './http.mjs';

export const HTTP_RESULTS_JSON = 'http-results.json';
export const HTTP_RESULTS_MD = 'http-results.md';
const CHART = 'http.svg';

/** The progress line of a finished run. */
export function httpOutcome(scenario, s) {
  if (!s) return 'no result';
  const bytes = scenario === 'http-static' || scenario === 'http-post-64k' ? `, ${mib((s.bytes_per_s ?? 0) / 1024)}/s of bodies` : '';
  const flag = s.bound === 'client' ? ' CLIENT-BOUND' : s.bound === 'both' ? ' both saturated' : '';
  return (
    `${si(s.req_per_s)} req/s${bytes}, p50 ${ms(s.latency_ms.p50)} ms, p99 ${ms(s.latency_ms.p99)} ms ` +
    `(server cpu ${pct(s.server_cpu)}, RSS ${mib(s.rss_kb)}, loadgen cpu ${pct(s.loadgen_cpu)})${flag}`
  );
}

/** Rows of every scenario's configurations, in run order: { scenario, group }. */
function allRows(results) {
  const rows = [];
  for (const scenario of HTTP_SCENARIO_NAMES) {
    for (const group of byConfig(runsOf(results, scenario))) rows.push({ scenario, group });
  }
  return rows;
}

function rowLabel({ scenario, group }) {
  const c = group.config;
  return [scenario, c.pipeline === 1 ? 'no' : `×${c.pipeline}`, c.file ?? (c.body_bytes ? `${c.body_bytes / 1024} KiB body` : '')];
}

/** One cell per server from `pick(summary)`; failed runs show ✗. */
function cells(servers, group, pick) {
  return Object.fromEntries(
    servers.map((s) => {
      const run = group.runs[s.name];
      return [s.name, failedCell(run) ?? (run?.summary ? pick(run.summary) : undefined)];
    }),
  );
}

/** http-results.md; `benchRel` as for renderMarkdown. */
export function renderHttpMarkdown(results, { benchRel = '..' } = {}) {
  const bench = benchRel.split(path.sep).join('/') || '.';
  const servers = results.servers;
  const out = resultsHeader(results, { bench, title: 'Switchboard HTTP benchmark results' });
  const rows = allRows(results);
  const keyHeaders = ['Scenario', 'Pipelining', 'Body'];

  out.push('', '## Requests per second (higher is better)', '');
  out.push(
    `${results.servers.find((s) => s.name === 'switchboard') ? '' : 'Switchboard was not part of this run. '}` +
      `Closed loop over ${rows[0]?.group.config.connections ?? '?'} keep-alive connections; every response was checked (status, ` +
      'media type, body byte for byte): a server that answers wrongly has a ✗, not a figure.',
  );
  out.push('');
  out.push(
    comparisonTable({
      keyHeaders,
      servers,
      rows: rows.map((r) => ({
        label: rowLabel(r),
        values: cells(servers, r.group, (s) => ({ value: s.req_per_s, text: `${si(s.req_per_s)}${cellMark(s)}` })),
      })),
    }),
  );
  out.push('', `![requests per second](${CHART})`);

  const staticRows = rows.filter((r) => r.scenario === 'http-static' || r.scenario === 'http-post-64k');
  if (staticRows.length) {
    out.push('', '## Body bytes per second (http-static, http-post-64k; higher is better)', '');
    out.push(
      comparisonTable({
        keyHeaders,
        servers,
        rows: staticRows.map((r) => ({
          label: rowLabel(r),
          values: cells(servers, r.group, (s) => ({ value: s.bytes_per_s, text: `${mib((s.bytes_per_s ?? 0) / 1024)}/s` })),
        })),
      }),
    );
  }

  out.push('', '## Latency: p50 / p99 in ms (lower is better)', '');
  out.push('From writing the request to reading the end of its response; with pipelining a request also waits for the ones before it on its connection.');
  out.push('');
  const cellText = (pick) => (r) => [
    ...rowLabel(r),
    ...servers.map((s) => {
      const run = r.group.runs[s.name];
      if (run?.error) return '✗';
      return run?.summary ? pick(run.summary) : '—';
    }),
  ];
  const header = [...keyHeaders, ...servers.map((s) => s.short ?? s.label)];
  out.push(table(header, rows.map(cellText((s) => `${ms(s.latency_ms.p50)} / ${ms(s.latency_ms.p99)}`))));

  out.push('', '## Server CPU and memory', '');
  out.push("The server's CPU (share of its core) over the measured window, and its resident memory at the window's end.");
  out.push('');
  out.push(table(header, rows.map(cellText((s) => `${pct(s.server_cpu)} · ${mib(s.rss_kb)}`))));

  const done = results.runs.filter((r) => r.summary);
  const count = (b) => done.filter((r) => r.summary.bound === b).length;
  out.push('', '## Saturation check', '');
  out.push(
    `Of ${done.length} runs with figures, the server alone was saturated in ${count('server')}, the load generator alone in ${count('client')}, ` +
      `both in ${count('both')}, neither in ${count('neither')}${count('unknown') ? `, unknown in ${count('unknown')}` : ''}.`,
  );
  const flagged = done.filter((r) => r.summary.bound !== 'server');
  if (flagged.length) {
    out.push('');
    for (const r of flagged) {
      out.push(`- ${r.scenario} ${r.label} ${r.server}: server ${pct(r.summary.server_cpu)}, load generator ${pct(r.summary.loadgen_cpu)} of a core (${r.summary.bound})`);
    }
  }
  const failed = results.runs.filter((r) => r.error);
  if (failed.length) {
    out.push('', '## Failed runs', '');
    for (const r of failed) out.push(`- ${r.scenario} ${r.label} ${r.server}: ${r.error.split('\n')[0]}`);
  }
  out.push('');
  return out.join('\n');
}

/** http.svg: requests/s, one panel without and one with pipelining. Returns the file names written. */
export function writeHttpCharts(results, outDir) {
  const rows = allRows(results);
  if (!rows.length) return [];
  const where = results.pinning.pinned
    ? `server on CPU ${results.pinning.server_cpu}, load generator on CPU ${results.pinning.loadgen_cpu}`
    : 'unpinned';
  const pipelines = [...new Set(rows.map((r) => r.group.config.pipeline))].sort((a, b) => a - b);
  const svg = barChart({
    title: 'HTTP: requests per second (higher is better)',
    subtitle: `${results.machine.cpu.model} · ${where} · ${results.mode} run ${results.started_at.slice(0, 10)}`,
    yLabel: 'requests/s',
    series: results.servers.map((s) => ({ name: s.name, label: s.label })),
    panels: pipelines.map((k) => {
      const rs = rows.filter((r) => r.group.config.pipeline === k);
      return {
        title: k === 1 ? 'one request in flight per connection' : `${k} pipelined requests per connection`,
        groups: rs.map((r) => ({ lines: [r.scenario.replace(/^http-/, ''), r.group.config.file ?? ''] })),
        values: Object.fromEntries(results.servers.map((s) => [s.name, rs.map((r) => r.group.runs[s.name]?.summary?.req_per_s ?? null)])),
      };
    }),
  });
  writeFileSync(path.join(outDir, CHART), svg);
  return [CHART];
}

/**
 * The end-of-run table: Switchboard's requests/s per configuration beside
 * each peer's ratio (Switchboard ÷ peer, above 1× Switchboard is faster).
 */
export function httpSummary(results) {
  const peers = results.servers.filter((s) => s.name !== 'switchboard');
  const header = ['scenario', 'config', 'Switchboard', ...peers.map((p) => `÷ ${p.short ?? p.label}`)];
  const lines = [];
  for (const { scenario, group } of allRows(results)) {
    const ours = group.runs.switchboard?.summary?.req_per_s;
    const row = [scenario, httpConfigLabel(scenario, group.config), Number.isFinite(ours) ? `${si(ours)} req/s` : 'failed'];
    for (const p of peers) {
      const theirs = group.runs[p.name]?.summary?.req_per_s;
      row.push(Number.isFinite(ours) && Number.isFinite(theirs) && theirs > 0 ? ratio(ours / theirs) : '—');
    }
    lines.push(row);
  }
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)));
  const fmt = (c) => c.map((v, i) => v.padEnd(widths[i])).join('  ').trimEnd();
  return [
    `Switchboard vs the HTTP peers, requests/s (${results.mode} run; ratios above 1× mean Switchboard is faster):`,
    fmt(header),
    ...lines.map(fmt),
  ];
}
