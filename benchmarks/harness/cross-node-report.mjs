// The cross-node section of results.md (SCENARIOS.md, "cross-node"):
// latency at the moderate rate and what the Redis hop adds to it, the
// saturation rate, Switchboard's ratios to Socket.IO's Redis adapters, the
// latency at every step, and the published anchors beside the figures.
import { ms, pct, ratio, si } from './format.mjs';
import { byConfig, cellMark, runsOf, serversIn, table } from './report-tables.mjs';
import { STOP_MEAN_LATENCY_MS } from './scenarios.mjs';

/** The anchors, quoted beside the figures. */
export const ANCHORS =
  'Centrifugo reports about 650k delivered messages/s per Redis instance; a publish with history costing about 17x a plain one. ' +
  "Targets: at least 10x Socket.IO's adapter per node; the Redis hop adding under 1 ms at p99 at moderate load.";

/**
 * Each scale-out server against its one-node baseline (the Redis hop) and
 * the comparisons the ratios are made of (ours ÷ peer).
 */
const BASELINE = { 'switchboard-redis': 'switchboard', 'socketio-redis': 'socketio', 'socketio-redis-sharded': 'socketio' };
const PAIRS = [
  ['switchboard-redis', 'socketio-redis'],
  ['switchboard-redis', 'socketio-redis-sharded'],
  ['switchboard', 'socketio'],
];

const int = (n) => Number(n).toLocaleString('en-US');
const msText = (v) => (Number.isFinite(v) ? `${ms(v)} ms` : '—');
const signed = (v) => (Number.isFinite(v) ? `${v >= 0 ? '+' : '−'}${ms(Math.abs(v))} ms` : '—');
const nodesOf = (s) => (s.nodes ? `${s.nodes} + Redis` : '1');

/** The saturation cell: "≥ 8.8M" (never over the limit), "< 20k" (the first step was), or the rate. */
function saturationText(sum) {
  if (!sum) return '—';
  const mark = sum.saturation_kind === 'at_least' ? '' : cellMark(sum);
  if (sum.saturation_kind === 'below') return `< ${si(sum.first_step_delivered)}${mark}`;
  return `${sum.saturation_kind === 'at_least' ? '≥ ' : ''}${si(sum.saturation_rate)}${mark}`;
}

/** ours ÷ theirs for a higher-is-better figure, with "≥"/"≤" when either side is a bound. */
function saturationRatio(a, b) {
  if (!a || !b || !Number.isFinite(a.saturation_rate) || !Number.isFinite(b.saturation_rate)) return '—';
  const r = a.saturation_rate / b.saturation_rate;
  const aBound = a.saturation_kind === 'at_least';
  const bBound = b.saturation_kind === 'at_least';
  if (aBound && bBound) return '—';
  return `${aBound ? '≥ ' : bBound ? '≤ ' : ''}${ratio(r)}`;
}

/** Lines of results.md for the cross-node runs (none when there are none). */
export function crossNodeSection(results) {
  const groups = byConfig(runsOf(results, 'cross-node'));
  if (!groups.length) return [];
  const servers = serversIn(results, 'cross-node');
  const out = ['', '## cross-node: fan-out across nodes through Redis', ''];
  out.push(
    'Publishers on node A, N subscribers on node B, both nodes on one redis-server started for the run (its pub/sub; no history): ' +
      'every publish crosses Redis once and node B fans it out. "One node" servers are the baseline: the same clients on one server ' +
      'without a broker. Node B has the server\'s core to itself; node A and Redis share the load generator\'s. ' +
      'Open loop, 32-byte messages; the first step is the moderate rate (the latency figures), then the rate doubles until the mean latency ' +
      `passes ${STOP_MEAN_LATENCY_MS} ms (the saturation rate: the highest delivered messages/s within it).`,
  );
  out.push('', `Anchors (the scale-out issue): ${ANCHORS}`);
  for (const g of groups) {
    const c = g.config;
    const sum = (name) => g.runs[name]?.summary ?? null;
    const failed = (name) => Boolean(g.runs[name]?.error);
    const moderate = `${int(c.moderate_rate)} publishes/s to ${int(c.connections)} subscribers (${si(c.moderate_rate * c.connections)} delivered/s)`;

    out.push('', `### N = ${int(c.connections)} subscribers, ${c.publishers} publishers: latency at ${moderate}`, '');
    out.push(
      'The Redis hop is the scale-out server\'s latency minus its one-node baseline\'s (the same library, the same clients, no broker).',
      '',
    );
    out.push(
      table(
        ['Server', 'Nodes', 'Delivered/s', 'p50', 'p99', 'mean', 'Redis hop p50', 'Redis hop p99'],
        servers.map((s) => {
          if (failed(s.name)) return [s.label, nodesOf(s), '✗', '—', '—', '—', '—', '—'];
          const m = sum(s.name)?.moderate;
          const base = BASELINE[s.name] ? sum(BASELINE[s.name])?.moderate : null;
          const hop = (k) => (m && base ? signed(m[k] - base[k]) : '—');
          return [
            s.label, nodesOf(s), m ? si(m.delivered_per_s) : '—', msText(m?.p50_ms), msText(m?.p99_ms), msText(m?.mean_ms),
            BASELINE[s.name] ? hop('p50_ms') : '—', BASELINE[s.name] ? hop('p99_ms') : '—',
          ];
        }),
      ),
    );

    // A configuration at the moderate rate only measures latency: no saturation figures.
    const ramp = c.rates.length > 1;
    if (ramp) {
      out.push('', `### N = ${int(c.connections)}: saturation rate (higher is better)`, '');
      out.push(
        'Node B\'s and the load generator\'s CPU are over the step that went over the limit (or the last step); node A\'s and ' +
          'Redis\'s over the whole run, warm-ups and lighter steps included (they share the load generator\'s core).',
        '',
      );
      out.push(
        table(
          ['Server', 'Nodes', 'Saturation (delivered/s)', 'Node B cpu', 'Load generator cpu', 'Node A cpu (run)', 'Redis cpu (run)'],
          servers.map((s) => {
            const run = g.runs[s.name];
            const x = run?.summary;
            const side = (k) => (Number.isFinite(run?.topology?.[k]?.cpu_util) ? pct(run.topology[k].cpu_util) : '—');
            return [
              s.label, nodesOf(s), failed(s.name) ? '✗' : saturationText(x), x ? pct(x.server_cpu) : '—', x ? pct(x.loadgen_cpu) : '—',
              side('publisher'), side('redis'),
            ];
          }),
        ),
      );
    }

    out.push('', `### N = ${int(c.connections)}: Switchboard ÷ peer`, '');
    out.push(
      `Above 1× Switchboard does better: ${ramp ? "saturation is Switchboard's rate ÷ the peer's, " : ''}p99 the peer's latency ÷ Switchboard's.`,
      '',
    );
    const label = (name) => servers.find((s) => s.name === name)?.label ?? name;
    const rows = PAIRS.filter(([a, b]) => g.runs[a] && g.runs[b]).map(([a, b]) => {
      const ma = sum(a)?.moderate;
      const mb = sum(b)?.moderate;
      const p99 = ma && mb && ma.p99_ms > 0 && mb.p99_ms > 0 ? ratio(mb.p99_ms / ma.p99_ms) : '—';
      return ramp ? [`${label(a)} ÷ ${label(b)}`, saturationRatio(sum(a), sum(b)), p99] : [`${label(a)} ÷ ${label(b)}`, p99];
    });
    const p99Header = `p99 at ${si(c.moderate_rate * c.connections)} delivered/s`;
    out.push(table(ramp ? ['Comparison', 'Saturation', p99Header] : ['Comparison', p99Header], rows));
    if (!ramp) continue;

    // Latency at every step: where the hop stays small and where each server gives up.
    const steps = [...new Set(servers.flatMap((s) => (sum(s.name)?.points ?? []).map((p) => p.target_delivered_per_s)))].sort((a, b) => a - b);
    out.push('', `### N = ${int(c.connections)}: latency p50 / p99 at every step`, '');
    out.push(
      table(
        ['Offered (delivered/s)', ...servers.map((s) => s.short ?? s.label)],
        steps.map((t) => [
          si(t),
          ...servers.map((s) => {
            const p = (sum(s.name)?.points ?? []).find((q) => q.target_delivered_per_s === t);
            if (!p) return '';
            const short = p.delivered_per_s < 0.95 * t ? ` (${si(p.delivered_per_s)} delivered)` : '';
            return `${ms(p.p50_ms)} / ${ms(p.p99_ms)} ms${short}`;
          }),
        ]),
      ),
    );
    out.push('', `![cross-node, N = ${c.connections}: mean latency against delivered messages/s](cross-node-n${c.connections}.svg)`);
  }
  return out;
}
