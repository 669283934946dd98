// The server-capacity view of the RPC suite (README.md, "Server capacity: a
// native client"): which runs capacity.mjs makes, and rpc-capacity.md from
// its results. The client is switchboard-rpcload (benchmarks/loadgen), one
// native thread, so the figure is the server's unless the client's CPU says
// otherwise.
import { pct, ratio, si } from '../../harness/format.mjs';
import { cellMark, comparisonTable } from '../../harness/report.mjs';
import { failedRunsSection } from './report.mjs';

/** The peers switchboard-rpcload speaks, in table order (Switchboard first: the reference of the ratios). */
export const CAPACITY_PEERS = ['switchboard', 'qrpc', 'http'];

/** The runs, by scenario; every configuration runs against every peer. */
export const CAPACITY_SCENARIOS = [
  { name: 'tiny-response', unit: 'calls', figure: 'ops', configs: [{ connections: 10, in_flight: 10 }, { connections: 10, in_flight: 100 }] },
  { name: 'fast-reply', unit: 'replies', figure: 'ops', configs: [{ connections: 10, in_flight: 10 }] },
  // serial-rtt also runs with the client on the server's core (`one_core`):
  // across two cores every call wakes an idle core twice, which on a VM
  // costs more than the server's own work (README.md).
  { name: 'serial-rtt', unit: 'calls', figure: 'latency', configs: [{ connections: 1, in_flight: 1 }, { connections: 1, in_flight: 1, one_core: true }] },
];

/** "c=10 k=100", "c=1 k=1 one core". */
export function capacityLabel(c) {
  return `c=${c.connections} k=${c.in_flight}${c.one_core ? ' one core' : ''}`;
}

export const CAPACITY_SCENARIO_NAMES = CAPACITY_SCENARIOS.map((s) => s.name);

/** Warm-up and measured seconds per run. */
export function capacityTiming({ quick, warmup, duration }) {
  return { warmup: warmup ?? (quick ? 0.25 : 2), duration: duration ?? (quick ? 1 : 5) };
}

/** [{ scenario, config, label, args, oneCore }] for the selected scenarios. */
export function capacityMatrix(scenarios) {
  const out = [];
  for (const s of CAPACITY_SCENARIOS) {
    if (!scenarios.includes(s.name)) continue;
    for (const c of s.configs) {
      const payload = s.name === 'fast-reply' ? 0 : 16;
      out.push({
        scenario: s.name,
        config: { ...c, payload },
        label: capacityLabel(c),
        oneCore: Boolean(c.one_core),
        args: ['--scenario', s.name, '--connections', String(c.connections), '--in-flight', String(c.in_flight)],
      });
    }
  }
  return out;
}

/**
 * The same configuration measured with the Node client (benchmarks/results/
 * rpc-results.json), for reference: the Node suite calls c=10 k=100 of 16 B
 * `parallel`.
 */
export function nodeClientFigure(nodeResults, run) {
  if (!nodeResults) return null;
  const c = run.config;
  const match = nodeResults.runs.find(
    (r) =>
      !c.one_core &&
      r.peer === run.peer &&
      (r.scenario === run.scenario || (run.scenario === 'tiny-response' && r.scenario === 'parallel')) &&
      r.config?.connections === c.connections &&
      r.config?.in_flight === c.in_flight &&
      r.summary,
  );
  return match ? { ops_per_s: match.summary.ops_per_s, latency_us: match.summary.latency_us, bound: match.summary.bound } : null;
}

/** Switchboard over each peer, oriented so that above 1 Switchboard does better. */
export function comparisons(runs) {
  const out = [];
  const groups = new Map();
  for (const r of runs) {
    const key = `${r.scenario} ${r.label}`;
    if (!groups.has(key)) groups.set(key, {});
    groups.get(key)[r.peer] = r;
  }
  const ok = (r) => (r && !r.error && r.summary ? r.summary : null);
  for (const [key, byPeer] of groups) {
    const ours = ok(byPeer.switchboard);
    if (!ours) continue;
    for (const [peer, run] of Object.entries(byPeer)) {
      const theirs = ok(run);
      if (peer === 'switchboard' || !theirs) continue;
      const up = (a, b) => (a > 0 && b > 0 ? Math.round((a / b) * 100) / 100 : null);
      const l = (s, q) => s.latency_us?.[q];
      out.push({
        scenario: run.scenario,
        label: run.label,
        key,
        vs: peer,
        throughput: up(ours.ops_per_s, theirs.ops_per_s),
        // Latency inverted: the peer's round trip over Switchboard's.
        latency_p50: up(l(theirs, 'p50'), l(ours, 'p50')),
        latency_p99: up(l(theirs, 'p99'), l(ours, 'p99')),
        latency_mean: up(l(theirs, 'mean'), l(ours, 'mean')),
      });
    }
  }
  return out;
}

// ---------------------------------------------------------------- Markdown

const us = (v) => (Number.isFinite(v) ? (v < 100 ? v.toFixed(1) : Math.round(v).toLocaleString('en-US')) : '—');
const mib = (kb) => (Number.isFinite(kb) ? String(Math.round(kb / 1024)) : '?');
const perCall = (step, who) => step?.[who]?.cpu_ns_per_call;

function line(cells) {
  return `| ${cells.join(' | ')} |`;
}

/** The headline table: one row per configuration, Switchboard's ratio to each peer. */
function headline(results, peers) {
  const rows = [];
  for (const s of CAPACITY_SCENARIOS) {
    for (const c of s.configs) {
      const label = capacityLabel(c);
      const runs = Object.fromEntries(results.runs.filter((r) => r.scenario === s.name && r.label === label).map((r) => [r.peer, r]));
      if (!Object.keys(runs).length) continue;
      const cell = (pick, fmt, mark) => (r) => {
        if (!r) return undefined;
        if (!r.summary) return { value: null, text: '✗' };
        const v = pick(r.summary);
        return { value: r.error ? null : v, text: `${fmt(v)}${mark ? cellMark(r.summary) : ''}${r.error ? ' ✗' : ''}` };
      };
      const figures =
        s.figure === 'latency'
          ? [
              ['p50 round trip (µs)', cell((x) => x.latency_us?.p50, us, true), true],
              ['mean round trip (µs)', cell((x) => x.latency_us?.mean, us, false), true],
              ['p99 round trip (µs)', cell((x) => x.latency_us?.p99, us, false), true],
            ]
          : [
              [`${s.unit}/s`, cell((x) => x.ops_per_s, si, true), false],
              ['p50 latency (µs)', cell((x) => x.latency_us?.p50, us, false), true],
            ];
      for (const [figure, pick, lowerIsBetter] of figures) {
        rows.push({
          lowerIsBetter,
          row: { label: [s.name, label, figure], values: Object.fromEntries(peers.map((p) => [p.name, pick(runs[p.name])])) },
        });
      }
    }
  }
  const out = [];
  for (const { row, lowerIsBetter } of rows) {
    const t = comparisonTable({ keyHeaders: ['Scenario', 'Config', 'Figure'], servers: peers, rows: [row], lowerIsBetter }).split('\n');
    if (!out.length) out.push(t[0], t[1]);
    out.push(t[2]);
  }
  return out.join('\n');
}

/** Every run's figures, the Node client's beside them. */
function details(results, peers, nodeResults) {
  const out = [
    line(['Scenario', 'Config', 'Peer', 'calls/s', 'p50 µs', 'p90 µs', 'p99 µs', 'mean µs', 'CPU server / client', 'server CPU per call', 'client CPU per call', 'server RSS (MiB)', 'Node client (rpc-results): calls/s, p50 µs']),
    line(['---', '---', '---', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:']),
  ];
  for (const r of results.runs) {
    const s = r.summary;
    const step = r.steps?.[0];
    const l = s?.latency_us ?? {};
    const node = nodeClientFigure(nodeResults, r);
    const peer = peers.find((p) => p.name === r.peer);
    const ns = (v) => (Number.isFinite(v) ? (v >= 10_000 ? `${(v / 1000).toFixed(1)} µs` : `${Math.round(v)} ns`) : '—');
    out.push(
      line([
        r.scenario,
        r.label,
        peer?.short ?? r.peer,
        s ? `${si(s.ops_per_s)}${cellMark(s)}${r.error ? ' ✗' : ''}` : '✗',
        us(l.p50),
        us(l.p90),
        us(l.p99),
        us(l.mean),
        s ? `${pct(s.server_cpu)} / ${pct(s.loadgen_cpu)}` : '—',
        ns(perCall(step, 'server')),
        ns(perCall(step, 'loadgen')),
        mib(s?.server_rss_kb),
        node ? `${si(node.ops_per_s)}, ${us(node.latency_us?.p50)}` : '—',
      ]),
    );
  }
  return out.join('\n');
}

/** The issue's targets, checked against this run. */
function targets(results) {
  const out = [];
  const get = (scenario, label, peer) => results.runs.find((r) => r.scenario === scenario && r.label === label && r.peer === peer && !r.error)?.summary;
  for (const label of ['c=10 k=10', 'c=10 k=100']) {
    const a = get('tiny-response', label, 'switchboard');
    const b = get('tiny-response', label, 'qrpc');
    if (a && b) {
      const r = a.ops_per_s / b.ops_per_s;
      out.push(`- tiny-response ${label}: Switchboard ${si(a.ops_per_s)} calls/s, qrpc ${si(b.ops_per_s)}: **${ratio(r)}** (target ≥ 10×: ${r >= 10 ? 'met' : 'not met'}).`);
    }
  }
  for (const label of ['c=1 k=1', 'c=1 k=1 one core']) {
    const s = get('serial-rtt', label, 'switchboard');
    if (!s) continue;
    const p50 = s.latency_us?.p50;
    const mean = s.latency_us?.mean;
    const where = label.endsWith('one core') ? 'client and server on one core' : 'client and server on two cores';
    out.push(`- serial-rtt, ${where}: Switchboard p50 **${us(p50)} µs**, mean ${us(mean)} µs (target < 30 µs: ${p50 < 30 ? 'met' : 'not met'} by the p50, ${mean < 30 ? 'met' : 'not met'} by the mean).`);
  }
  return out;
}

export function renderCapacity(results, { nodeResults = null, rpcRel = '../rpc' } = {}) {
  const peers = results.peers;
  const m = results.machine ?? {};
  const pin = results.pinning ?? {};
  const t = results.timing;
  const sb = m.switchboard ?? {};
  const git = sb.git ? `${sb.git.commit.slice(0, 12)}${sb.git.dirty ? ' with uncommitted changes' : ''}` : 'unknown commit';
  const out = [
    '# RPC server capacity: a native client',
    '',
    `Generated by \`${results.command}\` (${results.mode} run), ${results.started_at}. Method: [README.md](${rpcRel}/README.md#server-capacity-a-native-client).`,
    '',
    `The client is **switchboard-rpcload** (benchmarks/loadgen, one native thread, one epoll loop), not a Node process, so that the figure is the server's: ` +
      `${pin.pinned ? `servers pinned to CPU ${pin.server_cpu}, the client to CPU ${pin.loadgen_cpu}` : `unpinned (${pin.reason})`}; ` +
      `closed loop, ${t.warmup} s warm-up, ${t.duration} s measured, every answer checked; 16-byte payloads (\`{"a":1,"b":"xy"}\`), fast-reply empty. ` +
      `"c=1 k=1 one core" is serial-rtt with the client pinned to the server's core instead.`,
    '',
    `Machine: ${m.cpu?.model ?? '?'}, ${m.cpu?.logical_cpus ?? '?'} logical CPUs${m.virtualized ? ' (a VM)' : ''}, Linux ${m.kernel ?? '?'}; Node ${m.node ?? '?'}, ${m.rustc ?? 'rustc ?'}. Switchboard ${sb.version ?? '?'} at ${git}. ` +
      `Load average ${results.load_average?.start?.join(' ') ?? '?'} at the start, ${results.load_average?.end?.join(' ') ?? '?'} at the end.`,
    '',
    'Versions: ' + peers.map((p) => `${p.label}: ${p.versions_text}`).join('; ') + '.',
    '',
    '## Results',
    '',
    '"vs X" is Switchboard\'s figure over X\'s; for latency the inverse (X\'s round trip over Switchboard\'s), so **above 1× Switchboard does better**. ' +
      `† the client was saturated, ‡ both, ° neither (≥ ${pct(results.saturation_threshold)} of a core counts as saturated); no mark: the server alone.`,
    '',
    headline(results, peers),
    '',
    '## Against the targets',
    '',
    ...targets(results),
    '',
    '## Every run',
    '',
    '"CPU per call" is CPU time over the window ÷ calls completed in it: the client\'s shows how far it is from its own limit ' +
      '(one core is 10⁹ ns per second); the server\'s, what one call costs the server. The last column is the same configuration ' +
      'with the Node client of the suite, from benchmarks/results/rpc-results.json (c=10 k=100 there is `parallel`), where present.',
    '',
    details(results, peers, nodeResults),
    '',
  ];
  const clientBound = results.runs.filter((r) => r.summary?.bound === 'client' || r.summary?.bound === 'both');
  out.push('## Was the client the limit?', '');
  out.push(
    clientBound.length
      ? `In ${clientBound.length} run(s) the client was at ≥ ${pct(results.saturation_threshold)} of its core: ${clientBound.map((r) => `${r.scenario} ${r.label} ${r.peer}`).join(', ')}. Those figures are floors.`
      : `In no run: the client's highest CPU was ${pct(Math.max(0, ...results.runs.map((r) => r.summary?.loadgen_cpu ?? 0)))} of its core.`,
  );
  // Another process (or interrupt work) on a pinned core during the window:
  // that run measured a disturbed server or client (the JSON has every
  // run's core figures).
  // (On one core, the core carries both processes.)
  const extra = (core, cpu) => (core ? core.busy - (cpu ?? 0) : 0);
  const crowded = results.runs.filter((r) => {
    const s = r.summary;
    if (!s) return false;
    if (r.config.one_core) return extra(s.server_core, (s.server_cpu ?? 0) + (s.loadgen_cpu ?? 0)) >= 0.2;
    return extra(s.server_core, s.server_cpu) >= 0.2 || extra(s.loadgen_core, s.loadgen_cpu) >= 0.3;
  });
  if (crowded.length) {
    out.push(
      '',
      `In ${crowded.length} run(s) a pinned core was much busier than the process pinned to it (other work on the machine, or interrupts): ` +
        crowded
          .map((r) => `${r.scenario} ${r.label} ${r.peer} (server ${pct(r.summary.server_cpu)}, its core ${pct(r.summary.server_core?.busy)}; client ${pct(r.summary.loadgen_cpu)}, its core ${pct(r.summary.loadgen_core?.busy)})`)
          .join('; ') +
        '. Those figures are of a disturbed run.',
    );
  }
  out.push(...failedRunsSection(results));
  out.push('');
  return out.join('\n');
}
