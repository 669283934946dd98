#!/usr/bin/env node
// The benchmark suite in one command (method: README.md, scenarios and the
// server contract: SCENARIOS.md).
//
//   node benchmarks/run.mjs [--quick] [--scenario ws-echo,...] [--server switchboard,uws,...]
//                           [--out DIR] [--no-build] [--suite ws|rpc|all]
//   node benchmarks/run.mjs --render [--out DIR]          re-render results.md and charts from results.json
//   node benchmarks/run.mjs --update-readme [--out DIR]   paste results.md into README.md's results section
//
// It builds what it needs, then for every configuration starts each server
// pinned to one core, drives it with switchboard-loadgen pinned to another,
// and writes results.json, results.md and SVG charts. Progress goes to stderr.
// `--suite rpc` runs the RPC suite instead (rpc/run.mjs, rpc/README.md),
// `--suite all` both, into the same folder.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { guardRuns, parseCommandLine, parseList, progressDisplay } from './harness/cli.mjs';
import { startCoreSampler } from './harness/cpustat.mjs';
import { describeRun, runLoadgen } from './harness/loadgen.mjs';
import { fdLimits, loadAverage, machineInfo, pinning } from './harness/machine.mjs';
import { binDir, cargoTargetDir, loadgenBinary, prepare } from './harness/prepare.mjs';
import { bytes, mib, ms, pct, si } from './harness/format.mjs';
import { SATURATED, renderMarkdown, summarize, updateReadme, writeCharts } from './harness/report.mjs';
import { LOADGEN_SCENARIO, SCENARIO_NAMES, buildMatrix, configLabel } from './harness/scenarios.mjs';
import { regressionSummary } from './harness/summary.mjs';
import { SERVER_NAMES, describeVersions, serverByName, serverVersions, startServer } from './harness/servers.mjs';
import { PEER_NAMES as RPC_PEER_NAMES } from './rpc/lib/peers.mjs';
import { SCENARIO_NAMES as RPC_SCENARIO_NAMES } from './rpc/lib/scenarios.mjs';

const benchDir = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(benchDir, '..');
const defaultOut = path.join(benchDir, 'results');

/** How results.md links to this folder's README: relative inside the clone, absolute from a temp dir. */
function benchLink(outDir) {
  const rel = path.relative(outDir, benchDir);
  return path.relative(root, outDir).startsWith('..') ? benchDir : rel;
}

const USAGE = `usage: node benchmarks/run.mjs [options]
  --quick                 every scenario and server, tiny sizes (seconds per run); results go to a temp dir
  --scenario LIST         comma-separated: ${SCENARIO_NAMES.join(',')}
  --server LIST           comma-separated: ${SERVER_NAMES.join(',')}
  --out DIR               where results.json, results.md and the charts go
                          (default: benchmarks/results for a full run of everything, else a temp dir)
  --no-build              skip the build steps (Switchboard, peers' npm install, cargo build)
  --render                only re-render results.md and the charts from DIR/results.json
  --update-readme         only paste DIR/results.md into benchmarks/README.md (between the results markers)
  --suite ws|rpc|all      which suite: the WebSocket suite (default), the RPC suite (rpc/run.mjs; its
                          scenarios: ${RPC_SCENARIO_NAMES.join(',')}; --server takes its peers:
                          ${RPC_PEER_NAMES.join(',')}), or both into the same folder
  --help`;

const args = parseCommandLine(USAGE, {
  quick: { type: 'boolean', default: false },
  scenario: { type: 'string' },
  server: { type: 'string' },
  out: { type: 'string' },
  'no-build': { type: 'boolean', default: false },
  render: { type: 'boolean', default: false },
  'update-readme': { type: 'boolean', default: false },
  suite: { type: 'string', default: 'ws' },
});

// ------------------------------------------------------------ which suite

if (!['ws', 'rpc', 'all'].includes(args.suite)) {
  console.error(`--suite takes ws, rpc or all\n${USAGE}`);
  process.exit(2);
}
/**
 * A --scenario or --server list split between the suites: every item must
 * belong to one of them. Each suite gets its own items (undefined: no
 * filter; [] : the filter leaves it nothing to run).
 */
function splitList(value, wsKnown, rpcKnown, what) {
  if (!value) return { ws: undefined, rpc: undefined };
  const list = value.split(',').map((s) => s.trim()).filter(Boolean);
  for (const item of list) {
    if (!wsKnown.includes(item) && !rpcKnown.includes(item)) {
      console.error(`unknown ${what} "${item}" (known: ${[...new Set([...wsKnown, ...rpcKnown])].join(', ')})`);
      process.exit(2);
    }
  }
  return { ws: list.filter((i) => wsKnown.includes(i)), rpc: list.filter((i) => rpcKnown.includes(i)) };
}
const suiteScenarios = args.suite === 'all' ? splitList(args.scenario, SCENARIO_NAMES, RPC_SCENARIO_NAMES, 'scenario') : null;
const suiteServers = args.suite === 'all' ? splitList(args.server, SERVER_NAMES, RPC_PEER_NAMES, 'server') : null;
const runsWs = args.suite === 'ws' || (args.suite === 'all' && suiteScenarios.ws?.length !== 0 && suiteServers.ws?.length !== 0);
const runsRpc = args.suite === 'rpc' || (args.suite === 'all' && suiteScenarios.rpc?.length !== 0 && suiteServers.rpc?.length !== 0);
if (args.suite === 'all') {
  args.scenario = suiteScenarios.ws?.join(',');
  args.server = suiteServers.ws?.join(',');
}

/** Run the RPC suite (benchmarks/rpc/run.mjs) with this command's options; returns its exit status. */
function runRpcSuite(outDir) {
  const forward = [];
  if (args.quick) forward.push('--quick');
  if (args['no-build']) forward.push('--no-build');
  if (args.render) forward.push('--render');
  const scenario = args.suite === 'all' ? suiteScenarios.rpc?.join(',') : args.scenario;
  const peer = args.suite === 'all' ? suiteServers.rpc?.join(',') : args.server;
  if (scenario) forward.push('--scenario', scenario);
  if (peer) forward.push('--peer', peer);
  if (outDir) forward.push('--out', outDir);
  const r = spawnSync(process.execPath, [path.join(benchDir, 'rpc', 'run.mjs'), ...forward], { stdio: 'inherit' });
  return r.status ?? 1;
}
if (args.suite === 'rpc') {
  if (args['update-readme']) {
    console.error('--update-readme is for the WebSocket suite only');
    process.exit(2);
  }
  process.exit(runRpcSuite(args.out ? path.resolve(args.out) : undefined));
}
if (!runsWs) {
  process.exit(runRpcSuite(args.out ? path.resolve(args.out) : undefined));
}

// ------------------------------------------------------------ progress display

const { log, status } = progressDisplay();

// ------------------------------------------------------------ report-only modes

function render(outDir) {
  const file = path.join(outDir, 'results.json');
  const results = JSON.parse(readFileSync(file, 'utf8'));
  writeFileSync(path.join(outDir, 'results.md'), renderMarkdown(results, { benchRel: benchLink(outDir) }));
  const charts = writeCharts(results, outDir);
  log(`rendered ${path.join(outDir, 'results.md')} and ${charts.length} chart(s) from ${file}`);
}

if (args.render || args['update-readme']) {
  const outDir = path.resolve(args.out ?? defaultOut);
  if (args.render) render(outDir);
  if (args['update-readme']) {
    const results = JSON.parse(readFileSync(path.join(outDir, 'results.json'), 'utf8'));
    if (results.mode !== 'full' || results.partial) {
      console.error(`${outDir}/results.json is from a ${results.partial ? 'partial' : results.mode} run: only a full run's results belong in the README`);
      process.exit(1);
    }
    updateReadme(path.join(benchDir, 'README.md'), path.join(outDir, 'results.md'));
    log(`updated the results section of ${path.join(benchDir, 'README.md')} from ${path.join(outDir, 'results.md')}`);
  }
  if (runsRpc && args.render) process.exit(runRpcSuite(outDir));
  process.exit(0);
}

// ------------------------------------------------------------ the run

const quick = args.quick;
const scenarios = parseList(args.scenario, SCENARIO_NAMES, 'scenario');
const servers = parseList(args.server, SERVER_NAMES, 'server').map(serverByName);
// The committed results are a full run of everything; anything else goes to
// a temp dir unless --out says where, so a partial run never overwrites them.
const complete = !quick && scenarios.length === SCENARIO_NAMES.length && servers.length === SERVER_NAMES.length;
const outDir = path.resolve(
  args.out ?? (complete ? defaultOut : mkdtempSync(path.join(os.tmpdir(), `switchboard-bench-${quick ? 'quick' : 'partial'}-`))),
);
mkdirSync(outDir, { recursive: true });

const startedAt = new Date();
const startedHr = process.hrtime.bigint();
const pin = pinning();
const fd = fdLimits();

const prepareStarted = Date.now();
if (!args['no-build']) {
  try {
    prepare({ root, servers, log });
  } catch (err) {
    console.error(`\nbuild failed: ${err.message}`);
    process.exit(1);
  }
}
let loadgen;
try {
  loadgen = loadgenBinary();
} catch (err) {
  console.error(err.message);
  process.exit(1);
}

const prepareS = (Date.now() - prepareStarted) / 1000;
const measureStarted = Date.now();
const machine = machineInfo(root);
const serverMeta = servers.map((s) => {
  const versions = serverVersions(s, { root, machine });
  return { name: s.name, label: s.label, short: s.short ?? s.label, protocol: s.protocol, env: s.env ?? {}, versions, versions_text: describeVersions(versions) };
});
const { configs, notes } = buildMatrix({ quick, scenarios, fd });
if (!pin.pinned) notes.push(`Unpinned: ${pin.reason}. The server and the load generator shared the CPUs.`);

// Configuration-major order: every server runs a configuration before the
// next one starts, so a noisy neighbour on this shared machine spreads over
// all servers instead of landing on one.
const plan = [];
for (const c of configs) for (const s of servers) plan.push({ ...c, server: s });

const results = {
  schema_version: 1,
  mode: quick ? 'quick' : 'full',
  partial: !complete && !quick,
  command: `node benchmarks/run.mjs ${process.argv.slice(2).join(' ')}`.trim(),
  started_at: startedAt.toISOString(),
  finished_at: null,
  duration_s: null,
  build_s: Math.round(prepareS * 10) / 10,
  measure_s: null,
  machine,
  pinning: pin,
  fd_limit: fd,
  load_average: { start: loadAverage(), end: null },
  saturation_threshold: SATURATED,
  cargo_target_dir: cargoTargetDir(),
  notes,
  servers: serverMeta,
  runs: [],
};

function writeResults() {
  results.finished_at = new Date().toISOString();
  results.duration_s = Number(process.hrtime.bigint() - startedHr) / 1e9;
  results.measure_s = (Date.now() - measureStarted) / 1000;
  results.load_average.end = loadAverage();
  // Written after every run, so an interrupted suite still leaves its figures.
  writeFileSync(path.join(outDir, 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
}

/** The one-line outcome of a run for the progress display. */
function outcome(scenario, summary) {
  if (!summary) return 'no result';
  const cpu = (s) => `server cpu ${pct(s.server_cpu)}, loadgen cpu ${pct(s.loadgen_cpu)}`;
  const flag = (s) => (s.bound === 'client' ? ' CLIENT-BOUND' : s.bound === 'both' ? ' both saturated' : '');
  switch (scenario) {
    case 'ws-echo':
      return `${si(summary.msgs_per_s)} msg/s, mean ${ms(summary.latency_ms.mean)} ms (${cpu(summary)})${flag(summary)}`;
    case 'ws-channels':
      return `${si(summary.incoming_per_s)} req/s in, ${si(summary.outgoing_per_s)} msg/s out, RSS ${mib(summary.rss_kb)} (${cpu(summary)})${flag(summary)}`;
    case 'ws-idle':
      return `${bytes(summary.bytes_per_connection)}/connection (${summary.connected}/${summary.connections} connected)`;
    case 'ws-broadcast-room': {
      const rate =
        summary.saturation_kind === 'below'
          ? `over the limit at the first step`
          : `${summary.saturation_kind === 'at_least' ? '≥ ' : ''}${si(summary.saturation_rate)} delivered/s within the limit`;
      return `${rate}, ${summary.points.length} steps (at the limit step: ${cpu(summary.limit_step)})${flag(summary)}`;
    }
    default:
      return '';
  }
}

const runs = guardRuns({ log, outDir: () => outDir, writeResults });

const expectedTotal = plan.reduce((a, r) => a + r.expectedS + 1, 0);
log(
  `${plan.length} runs (${results.mode} mode), about ${Math.ceil(expectedTotal / 60)} min; ` +
    (pin.pinned ? `server on CPU ${pin.server_cpu}, load generator on CPU ${pin.loadgen_cpu}` : `unpinned (${pin.reason})`) +
    `; results in ${outDir}`,
);
for (const note of notes) log(`note: ${note}`);

let failures = 0;
for (const [i, item] of plan.entries()) {
  const label = configLabel(item.scenario, item.config);
  const prefix = `[${i + 1}/${plan.length}] ${item.scenario} ${label} ${item.server.name}`;
  status(`${prefix} … starting`);
  const record = {
    scenario: item.scenario,
    server: item.server.name,
    label,
    config: item.config,
    server_process: null,
    loadgen: null,
    steps: [],
    cores: [],
    summary: null,
    error: null,
  };
  let server = null;
  try {
    server = await startServer(item.server, { root, binDir: binDir(), cpu: pin.pinned ? pin.server_cpu : null });
    const current = runs.begin();
    current.server = server;
    record.server_process = { pid: server.pid, port: server.port, command: server.command, cpus_allowed: server.cpus };
    if (item.settleMs) await new Promise((r) => setTimeout(r, item.settleMs));
    status(`${prefix} … running`);
    const sampler = startCoreSampler();
    const cores = [];
    const run = await runLoadgen({
      binary: loadgen,
      cpu: pin.pinned ? pin.loadgen_cpu : null,
      port: server.port,
      protocol: item.server.protocol,
      serverPid: server.pid,
      args: ['--scenario', LOADGEN_SCENARIO[item.scenario], ...item.args],
      // Generous: connecting thousands of clients and slow servers take time;
      // the limit only catches a hung run.
      timeoutMs: (item.expectedS * 2 + 60 + item.config.connections / 200) * 1000,
      onSpawn: (child) => (current.client = child),
      onProgress: (text) => status(`${prefix} … ${text}`),
      onStep: (step) => {
        // The step is printed as its measured window ends.
        const now = performance.now();
        cores.push(sampler.window(now - (step.duration_s ?? 0) * 1000, now));
        if (item.scenario !== 'ws-broadcast-room') return;
        const l = step.latency_us ?? {};
        log(
          `      ${item.server.name} R=${step.rate}/s → ${si(step.received_per_s)} delivered/s, mean ${ms(l.mean / 1000)} ms, p99 ${ms(l.p99 / 1000)} ms ` +
            `(server cpu ${pct(step.server?.cpu_util)}, loadgen cpu ${pct(step.loadgen?.cpu_util)})`,
        );
      },
    });
    record.loadgen = describeRun(run);
    sampler.stop();
    record.steps = run.steps;
    record.cores = cores;
    record.summary = summarize(item.scenario, run.steps, { cores, pin });
    if (!server.running()) {
      const e = await server.exited;
      record.error = `the server exited during the run (code ${e.code}, signal ${e.signal}): ${server.output().trim().split('\n').slice(-5).join(' | ')}`;
    } else if (run.error) record.error = `cannot run the load generator: ${run.error}`;
    else if (run.timedOut) record.error = `the load generator did not finish in time and was stopped`;
    else if (run.code !== 0) record.error = `the load generator exited with ${run.code ?? run.signal}: ${run.stderr.trim().split('\n').slice(-3).join(' | ')}`;
    else if (!run.steps.length) record.error = 'the load generator printed no result';
    // What the server printed is often why (a handler error, a replaced worker).
    if (record.error && server.running()) record.server_output = server.output().trim().split('\n').slice(-20).join('\n') || undefined;
  } catch (err) {
    record.error = err.message;
  } finally {
    if (server) await server.stop();
    runs.end();
  }
  results.runs.push(record);
  writeResults();
  if (record.error) {
    failures++;
    log(`${prefix} … FAILED: ${record.error.split('\n')[0]}`);
    const detail = record.error.split('\n').slice(1).join('\n');
    if (detail) log(detail);
  } else {
    log(`${prefix} … ${outcome(item.scenario, record.summary)}`);
  }
}

writeResults();
writeFileSync(path.join(outDir, 'results.md'), renderMarkdown(results, { benchRel: benchLink(outDir) }));
const charts = writeCharts(results, outDir);
const clientBound = results.runs.filter((r) => r.summary?.bound === 'client' || r.summary?.bound === 'both').length;
log(
  `\ndone in ${Math.round(results.duration_s)} s (build ${Math.round(prepareS)} s, runs ${Math.round(results.measure_s)} s): ` +
    `${plan.length - failures}/${plan.length} runs succeeded` +
    `${clientBound ? `, ${clientBound} with the load generator saturated (marked in results.md)` : ''}.`,
);
log(`results: ${[path.join(outDir, 'results.json'), path.join(outDir, 'results.md'), ...charts].join(', ')}`);
// Last, so it ends the output (CI's included): the figures a regression moves.
if (servers.some((s) => s.name === 'switchboard') && results.runs.some((r) => r.scenario === 'ws-idle' || r.scenario === 'ws-echo')) {
  log(`\n${regressionSummary(results).join('\n')}`);
}
// --suite all: the RPC suite next, into the same folder.
const rpcStatus = runsRpc ? runRpcSuite(outDir) : 0;
process.exit(failures || rpcStatus ? 1 : 0);
