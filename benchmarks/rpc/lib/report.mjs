// From the driver's steps to the RPC suite's figures and rpc-results.md.
// The saturation check and the comparison table are the WebSocket suite's
// (benchmarks/harness/report.mjs): a process at ≥ 90 % of its core is
// saturated, and a peer named `switchboard`, when present, is the reference
// of the "vs X" columns (above 1×: Switchboard does better).
import path from 'node:path';
import { SATURATED, bound, cellMark, comparisonTable } from '../../harness/report.mjs';
import { pct, si } from '../../harness/format.mjs';
import { SCENARIOS, describeConfig } from './scenarios.mjs';
import { MiB } from './wire.mjs';

/** The figures of one run from its step. */
export function summarize(step, { core = null, pin = null } = {}) {
  if (!step) return null;
  return {
    ops_per_s: step.ops_per_s,
    ops: step.ops,
    unit: step.unit,
    responses_per_s: step.responses_per_s ?? null,
    bytes_per_s: step.bytes_per_s ?? null,
    sent_per_s: step.sent_per_s ?? null,
    latency_us: step.latency_us ?? null,
    server_rss_kb: step.server?.rss_kb ?? null,
    server_rss_peak_kb: step.server?.rss_peak_kb ?? null,
    client_rss_kb: step.loadgen?.rss_kb ?? null,
    errors: step.errors,
    // server_cpu, loadgen_cpu (the client's), bound, and both cores' utilisation.
    ...bound(step, core, pin),
  };
}

// ---------------------------------------------------------------- Markdown

const int = (n) => Number(n).toLocaleString('en-US');

/** Microseconds: 38.2, 412, 1,234. */
function us(v) {
  if (v === null || v === undefined || !Number.isFinite(v)) return '—';
  return v < 100 ? v.toFixed(1) : int(Math.round(v));
}

function mibText(kb) {
  return Number.isFinite(kb) ? String(Math.round(kb / 1024)) : '?';
}

function mibps(bytesPerS) {
  if (!Number.isFinite(bytesPerS)) return '—';
  const v = bytesPerS / MiB;
  return v >= 100 ? v.toFixed(0) : v.toFixed(1);
}

/** Group a scenario's runs by configuration label, in run order. */
function byConfig(runs) {
  const groups = new Map();
  for (const r of runs) {
    if (!groups.has(r.label)) groups.set(r.label, { config: r.config, runs: {} });
    groups.get(r.label).runs[r.peer] = r;
  }
  return [...groups.values()];
}

/**
 * The rows of one configuration: [label, pick(summary) → number, format,
 * lowerIsBetter, withMark]. The first row is the scenario's figure.
 */
function rowsFor(scenario) {
  const lat = (q) => [`${q} latency (µs)`, (s) => s.latency_us?.[q], us, true, false];
  const cpu = ['CPU server / client', 'cpu', null, false, false];
  const rss = ['RSS server / client (MiB)', 'rss', null, false, false];
  switch (scenario.figure) {
    case 'latency':
      return [
        ['mean round trip (µs)', (s) => s.latency_us?.mean, us, true, true],
        ['p50 round trip (µs)', (s) => s.latency_us?.p50, us, true, false],
        ['p99 round trip (µs)', (s) => s.latency_us?.p99, us, true, false],
        ['calls/s', (s) => s.ops_per_s, si, false, false],
        cpu,
        rss,
      ];
    case 'bytes':
      return [
        [`${scenario.unit}/s`, (s) => s.ops_per_s, si, false, true],
        ['MiB/s', (s) => s.bytes_per_s, mibps, false, false],
        lat('p50'),
        lat('p99'),
        cpu,
        rss,
      ];
    case 'responses':
      return [
        ['responses/s', (s) => s.responses_per_s, si, false, true],
        ['calls/s', (s) => s.ops_per_s, si, false, false],
        lat('p50'),
        lat('p99'),
        cpu,
        rss,
      ];
    default:
      if (scenario.name === 'one-way') {
        return [
          ['received/s', (s) => s.ops_per_s, si, false, true],
          ['sent/s', (s) => s.sent_per_s, si, false, false],
          cpu,
          rss,
        ];
      }
      return [[`${scenario.unit}/s`, (s) => s.ops_per_s, si, false, true], lat('p50'), lat('p99'), cpu, rss];
  }
}

function cell(run, pick, format, withMark) {
  if (!run) return undefined;
  if (run.skipped) return { value: null, text: 'n/a' };
  if (run.error && !run.summary) return { value: null, text: '✗' };
  const s = run.summary;
  if (!s) return { value: null, text: '—' };
  if (pick === 'cpu') return { value: null, text: `${pct(s.server_cpu)} / ${pct(s.loadgen_cpu)}` };
  if (pick === 'rss') return { value: null, text: `${mibText(s.server_rss_kb)} / ${mibText(s.client_rss_kb)}` };
  const v = pick(s);
  const failed = run.error ? ' ✗' : '';
  return { value: run.error ? null : v, text: `${format(v)}${withMark ? cellMark(s) : ''}${failed}` };
}

function scenarioTable(scenario, runs, peers) {
  const groups = byConfig(runs);
  const lines = [];
  for (const g of groups) {
    for (const [label, pick, format, lower, withMark] of rowsFor(scenario)) {
      const row = {
        label: [g.runs[Object.keys(g.runs)[0]].label, label],
        values: Object.fromEntries(peers.map((p) => [p.name, cell(g.runs[p.name], pick, format, withMark)])),
      };
      const table = comparisonTable({ keyHeaders: ['Configuration', 'Figure'], servers: peers, rows: [row], lowerIsBetter: lower }).split('\n');
      if (!lines.length) lines.push(table[0], table[1]);
      lines.push(table[2]);
    }
  }
  return lines.join('\n');
}

function pinningSentence(p) {
  if (!p.pinned) return `Servers and the client ran **unpinned** (${p.reason}); their CPU shares may interfere.`;
  return (
    `Each server ran pinned to CPU ${p.server_cpu} and the client (the load-generating Node process) to CPU ${p.loadgen_cpu} ` +
    `(\`taskset -c\`; the server's allowed CPUs were read back from /proc and recorded per run).`
  );
}

/** rpc-results.md; `rpcRel` is benchmarks/rpc relative to the output folder, for its links. */
export function renderMarkdown(results, { rpcRel = '../rpc' } = {}) {
  const rel = rpcRel.split(path.sep).join('/') || '.';
  const peers = results.peers;
  const m = results.machine;
  const out = [];
  out.push(`# Switchboard RPC benchmark results (${results.mode} run${results.partial ? ', partial' : ''})`);
  out.push('');
  out.push(
    `Measured ${results.started_at.slice(0, 10)} in ${Math.round(results.measure_s ?? results.duration_s)} s with \`${results.command}\`; ` +
      `${results.timing.warmup} s warm-up and ${results.timing.duration} s measured per run, a fresh server per run. ` +
      `Raw figures: [rpc-results.json](rpc-results.json). Method and mappings: [rpc/README.md](${rel}/README.md).`,
  );
  out.push('');
  out.push(
    `- Machine: ${m.cpu.model}, ${m.cpu.logical_cpus} logical CPUs, ${(m.memory_bytes / 2 ** 30).toFixed(1)} GiB RAM, ` +
      `Linux ${m.kernel}${m.os ? ` (${m.os})` : ''}${m.virtualized ? ', virtualized' : ''}`,
  );
  out.push(
    `- Node ${m.node}; Switchboard ${m.switchboard.version}${m.switchboard.git ? ` at ${m.switchboard.git.commit.slice(0, 12)}${m.switchboard.git.dirty ? ' with uncommitted changes' : ''}` : ''}`,
  );
  out.push(`- ${pinningSentence(results.pinning)}`);
  out.push(`- Load average ${results.load_average.start.join(' ')} at the start, ${results.load_average.end?.join(' ') ?? '?'} at the end.`);
  for (const note of results.notes) out.push(`- ${note}`);
  out.push('');
  out.push('| Peer | Protocol | Versions | Settings |');
  out.push('|---|---|---|---|');
  for (const p of peers) {
    const env = Object.entries(p.env ?? {}).map(([k, v]) => `${k}=${v}`).join(' ');
    const settings = [env, p.settings].filter(Boolean).join('; ');
    out.push(`| ${p.label} | ${p.protocol} | ${p.versions_text} | ${settings || 'defaults'} |`);
  }
  out.push('');
  const ref = peers.find((p) => p.name === 'switchboard');
  out.push(
    (ref
      ? `"vs X" columns are Switchboard's figure relative to X's, oriented so that **above 1× Switchboard does better** (for latencies too). `
      : 'No `switchboard` peer in this run, so no ratio columns. ') +
      `Marks on a scenario's figure: † the client, not the server, was saturated (≥ ${SATURATED * 100}% of its core): ` +
      `the figure is a floor for the server; ‡ both were; ° neither was (the loop's latency, or other work on the cores, was the limit). ` +
      `n/a: the peer has no equivalent (why: at the end). ✗: the run failed (see the JSON).`,
  );

  for (const scenario of SCENARIOS) {
    const runs = results.runs.filter((r) => r.scenario === scenario.name);
    if (!runs.length) continue;
    const higher = scenario.figure === 'latency' ? 'lower is better' : 'higher is better';
    out.push('', `## ${scenario.title} (${higher})`, '');
    for (const g of byConfig(runs)) out.push(`- ${g.runs[Object.keys(g.runs)[0]].label}: ${describeConfig(scenario.name, g.config)}.`);
    out.push('');
    out.push(scenarioTable(scenario, runs, peers));
  }

  // Which side saturated.
  const measured = results.runs.filter((r) => r.summary);
  const count = (b) => measured.filter((r) => r.summary.bound === b).length;
  out.push('', '## Saturation check', '');
  out.push(
    `Of ${measured.length} measured runs, the server alone was saturated in ${count('server')}, ` +
      `the client alone in ${count('client')}, both in ${count('both')}, neither in ${count('neither')}` +
      `${count('unknown') ? `, unknown in ${count('unknown')}` : ''}. The client is one Node process on one core; ` +
      `for the fastest peers it can be the limit, and then the figure says more about the client library than about the server.`,
  );
  const clientBound = measured.filter((r) => r.summary.bound === 'client' || r.summary.bound === 'both');
  if (clientBound.length) {
    out.push('', 'Runs where the client was saturated (†, ‡):', '');
    for (const r of clientBound) {
      out.push(`- ${r.scenario} ${r.label} ${r.peer}: server ${pct(r.summary.server_cpu)}, client ${pct(r.summary.loadgen_cpu)} of a core`);
    }
  }
  const crowded = measured.filter((r) => r.summary.server_core && r.summary.server_core.busy - (r.summary.server_cpu ?? 0) >= 0.2);
  if (crowded.length) {
    out.push(
      '',
      `In ${crowded.length} run(s) the server's core was at least 20 points busier than the server process ` +
        '(interrupt work for its sockets, or other processes on the machine: such a run measured a disturbed server):',
      '',
    );
    const core = (c) => `${pct(c.busy)} busy (interrupts ${pct(c.irq)}, steal ${pct(c.steal)})`;
    for (const r of crowded.slice(0, 20)) out.push(`- ${r.scenario} ${r.label} ${r.peer}: server ${pct(r.summary.server_cpu)}, its core ${core(r.summary.server_core)}`);
    if (crowded.length > 20) out.push(`- … and ${crowded.length - 20} more (the JSON has every run's core figures)`);
  }

  // What each peer does for each scenario.
  out.push('', '## How each peer runs the scenarios', '');
  for (const p of peers) {
    const entries = Object.entries(p.mappings ?? {});
    const skipped = Object.entries(p.unsupported ?? {});
    if (!entries.length && !skipped.length) continue;
    out.push(`- **${p.label}**: ${entries.map(([s, t]) => `${s}: ${t}`).join('; ')}${entries.length ? '.' : ''}`);
    for (const [s, why] of skipped) out.push(`  - ${s}: n/a, ${why}.`);
  }

  out.push(...failedRunsSection(results));
  out.push('');
  return out.join('\n');
}

/** The Markdown lines listing the runs that failed, with the first line of each error (none when every run succeeded). */
export function failedRunsSection(results) {
  const failed = results.runs.filter((r) => r.error);
  if (!failed.length) return [];
  return ['', '## Failed runs', '', ...failed.map((r) => `- ${r.scenario} ${r.label} ${r.peer}: ${r.error.split('\n')[0]}`)];
}
