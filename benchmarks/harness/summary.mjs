// The figures that show a regression at a glance, as a few lines of plain
// text: Switchboard's memory per idle connection (ws-idle) and its echo
// rates (ws-echo, every configuration), each beside uWebSockets.js's and
// with the ratio of the two. run.mjs prints it at the end of every run, and
// the benchmark test (tests/benchmarks/harness.test.mjs) repeats it in CI's
// output, so a reviewer sees a 5× change at once. Nothing asserts on it: on
// a shared machine a quick run's figures move by tens of percent, and its
// 1,000 idle connections give only a rough memory figure; a ratio that
// moves by several times is the signal.
import { bytes, ratio, si } from './format.mjs';
import { configLabel } from './scenarios.mjs';

const OURS = 'switchboard';
const PEER = 'uws';

/** The run of `server` for a configuration label, and its figure (null if it failed). */
function figure(results, scenario, label, server, key) {
  const run = results.runs.find((r) => r.scenario === scenario && r.label === label && r.server === server);
  const value = run?.summary?.[key];
  return Number.isFinite(value) && value > 0 ? value : null;
}

/** The configuration labels of a scenario, in run order, each once. */
function labels(results, scenario) {
  return [...new Set(results.runs.filter((r) => r.scenario === scenario).map((r) => r.label ?? configLabel(scenario, r.config)))];
}

/**
 * Rows of { scenario, config, ours, peer, ratio, figure } for every ws-idle
 * and ws-echo configuration in `results` (a results.json object). `ratio`
 * is Switchboard's figure over uWebSockets.js's (null when either failed):
 * bytes per connection for ws-idle (above 1× Switchboard holds more),
 * messages/s for ws-echo (above 1× Switchboard is faster).
 */
export function regressionRows(results) {
  const rows = [];
  for (const [scenario, key, format, unit] of [
    ['ws-idle', 'bytes_per_connection', bytes, '/conn'],
    ['ws-echo', 'msgs_per_s', si, ' msg/s'],
  ]) {
    for (const label of labels(results, scenario)) {
      const ours = figure(results, scenario, label, OURS, key);
      const peer = figure(results, scenario, label, PEER, key);
      rows.push({
        scenario,
        config: label,
        ours,
        peer,
        ratio: ours !== null && peer !== null ? ours / peer : null,
        text: {
          ours: ours === null ? 'failed' : `${format(ours)}${unit}`,
          peer: peer === null ? 'failed' : `${format(peer)}${unit}`,
        },
      });
    }
  }
  return rows;
}

/** The summary as lines of a fixed-width table, with a title and a key. */
export function regressionSummary(results) {
  const rows = regressionRows(results);
  const header = ['scenario', 'config', 'Switchboard', 'uWS.js', 'Switchboard ÷ uWS.js'];
  const cells = rows.map((r) => [
    r.scenario,
    r.config,
    r.text.ours,
    r.text.peer,
    r.ratio === null ? '—' : `${ratio(r.ratio)} ${r.scenario === 'ws-idle' ? '(memory: lower is better)' : '(rate: higher is better)'}`,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const line = (c) => c.map((v, i) => (i === c.length - 1 ? v : v.padEnd(widths[i]))).join('  ').trimEnd();
  const mode = results.mode === 'quick' ? 'quick run: rough figures, compare the ratios' : `${results.mode} run`;
  return [
    `Switchboard vs uWebSockets.js, idle memory and echo (${mode}; no assertion, a 5× change is a regression):`,
    line(header),
    ...cells.map(line),
    'n: idle connections; c: connections, k: messages in flight on each, p: payload bytes.',
  ];
}
