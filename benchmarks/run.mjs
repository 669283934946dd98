#!/usr/bin/env node
// The benchmark suite in one command (method: README.md, scenarios and the
// server contract: SCENARIOS.md).
//
//   node benchmarks/run.mjs [--quick] [--scenario ws-echo,...] [--server switchboard,uws,...]
//                           [--out DIR] [--no-build] [--suite ws|http|rpc|all]
//   node benchmarks/run.mjs --render [--out DIR]          re-render results.md and charts from results.json
//   node benchmarks/run.mjs --update-readme [--out DIR]   paste results.md into README.md's results section
//
// It builds what it needs, then for every configuration starts each server
// pinned to one core, drives it with switchboard-loadgen pinned to another,
// and writes results.json, results.md and SVG charts. Progress goes to stderr.
// `--suite http` runs the HTTP scenarios instead (the same runner, its own
// servers and harness/http*.mjs; http-results.json, http-results.md and
// http.svg), `--suite rpc` the RPC suite (rpc/run.mjs, rpc/README.md),
// `--suite all` all three, into the same folder.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
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
import {
  DEFAULT_SERVER_NAMES, SERVER_NAMES, describeVersions, runsScenario, serverByName, serverVersions, skipReason, startServer,
} from './harness/servers.mjs';
import { startTopology } from './harness/topology.mjs';
import {
  HTTP_SCENARIO_NAMES, HTTP_SERVER_NAMES, buildHttpMatrix, createStaticDir, httpConfigLabel, httpFailure, httpServerByName, summarizeHttp,
} from './harness/http.mjs';
import { HTTP_RESULTS_JSON, HTTP_RESULTS_MD, httpOutcome, httpSummary, renderHttpMarkdown, writeHttpCharts } from './harness/http-report.mjs';
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
                          (--suite http: ${HTTP_SCENARIO_NAMES.join(',')})
  --server LIST           comma-separated: ${DEFAULT_SERVER_NAMES.join(',')}
                          and, on request only, ${SERVER_NAMES.filter((n) => !DEFAULT_SERVER_NAMES.includes(n)).join(',')}
                          (SockJS over its xhr-streaming transport: ws-echo, ws-broadcast-room, ws-idle)
                          (--suite http: ${HTTP_SERVER_NAMES.join(',')})
  --out DIR               where results.json, results.md and the charts go (http-results.* for --suite http)
                          (default: benchmarks/results for a full run of everything, else a temp dir)
  --no-build              skip the build steps (Switchboard, peers' npm install, cargo build)
  --render                only re-render results.md and the charts from DIR/results.json
                          (--suite http: http-results.md from DIR/http-results.json; all: every suite's)
  --update-readme         only paste DIR/results.md into benchmarks/README.md (between the results markers;
                          --suite http: DIR/http-results.md between the HTTP results markers)
  --suite ws|http|rpc|all which suite: the WebSocket suite (default), the HTTP suite (SCENARIOS.md, "HTTP"),
                          the RPC suite (rpc/run.mjs; its scenarios: ${RPC_SCENARIO_NAMES.join(',')};
                          --server takes its peers: ${RPC_PEER_NAMES.join(',')}), or all three into the same folder
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

// ------------------------------------------------------------ the suites run by this runner

/**
 * What differs between the WebSocket and the HTTP suite; the loop that runs
 * them (runSuite below) is the same. `loadgenArgs(item)`: the load
 * generator's scenario arguments for a run; `serverEnv`: environment every
 * server of the suite gets (set by `setup`, which makes what the suite needs
 * and returns its clean-up).
 */
const SUITES = {
  ws: {
    name: 'ws',
    title: 'WebSocket',
    scenarioNames: SCENARIO_NAMES,
    serverNames: SERVER_NAMES,
    defaultServerNames: DEFAULT_SERVER_NAMES,
    serverByName,
    jsonFile: 'results.json',
    mdFile: 'results.md',
    readmeMarkers: undefined,
    setup: () => () => {},
    serverEnv: {},
    buildMatrix: ({ quick, scenarios, fd }) => buildMatrix({ quick, scenarios, fd }),
    loadgenArgs: (item) => ['--scenario', LOADGEN_SCENARIO[item.scenario], ...item.args],
    configLabel,
    summarize,
    outcome,
    failure: () => null,
    renderMarkdown,
    writeCharts,
    summaryLines: (results) =>
      results.servers.some((s) => s.name === 'switchboard') && results.runs.some((r) => r.scenario === 'ws-idle' || r.scenario === 'ws-echo')
        ? regressionSummary(results)
        : null,
  },
  http: {
    name: 'http',
    title: 'HTTP',
    scenarioNames: HTTP_SCENARIO_NAMES,
    serverNames: HTTP_SERVER_NAMES,
    defaultServerNames: HTTP_SERVER_NAMES,
    serverByName: httpServerByName,
    jsonFile: HTTP_RESULTS_JSON,
    mdFile: HTTP_RESULTS_MD,
    readmeMarkers: { begin: '<!-- http-results:begin -->', end: '<!-- http-results:end -->' },
    staticDir: null,
    serverEnv: {},
    setup() {
      const files = createStaticDir();
      this.staticDir = files.dir;
      this.serverEnv = { STATIC_DIR: files.dir };
      return files.remove;
    },
    buildMatrix({ quick, scenarios }) {
      const m = buildHttpMatrix({ quick, scenarios, staticDir: this.staticDir });
      m.notes.push(
        'HyperExpress 6.18 runs on the registry copy of uWebSockets.js 20.30 that the uws peer uses (its own dependency, a GitHub tag, cannot be installed here); ' +
          'HyperExpress 7 needs a newer uWebSockets.js and Node 22.',
      );
      return m;
    },
    loadgenArgs: (item) => item.args,
    configLabel: httpConfigLabel,
    summarize: summarizeHttp,
    outcome: httpOutcome,
    failure: httpFailure,
    renderMarkdown: renderHttpMarkdown,
    writeCharts: writeHttpCharts,
    summaryLines: (results) => (results.servers.some((s) => s.name === 'switchboard') && results.runs.length ? httpSummary(results) : null),
  },
};

// ------------------------------------------------------------ which suites

if (!['ws', 'http', 'rpc', 'all'].includes(args.suite)) {
  console.error(`--suite takes ws, http, rpc or all\n${USAGE}`);
  process.exit(2);
}
/**
 * A --scenario or --server list split between the suites: every item must
 * belong to one of them. Each suite gets its own items (undefined: no
 * filter; [] : the filter leaves it nothing to run).
 */
function splitList(value, known, what) {
  const out = Object.fromEntries(Object.keys(known).map((k) => [k, undefined]));
  if (!value) return out;
  const list = value.split(',').map((s) => s.trim()).filter(Boolean);
  const all = [...new Set(Object.values(known).flat())];
  for (const item of list) {
    if (!all.includes(item)) {
      console.error(`unknown ${what} "${item}" (known: ${all.join(', ')})`);
      process.exit(2);
    }
  }
  for (const [suite, names] of Object.entries(known)) out[suite] = list.filter((i) => names.includes(i));
  return out;
}
const picked = {
  scenario: { ws: args.scenario, http: args.scenario, rpc: args.scenario },
  server: { ws: args.server, http: args.server, rpc: args.server },
};
const selected = { ws: args.suite === 'ws', http: args.suite === 'http', rpc: args.suite === 'rpc' };
if (args.suite === 'all') {
  const scenarios = splitList(args.scenario, { ws: SCENARIO_NAMES, http: HTTP_SCENARIO_NAMES, rpc: RPC_SCENARIO_NAMES }, 'scenario');
  const servers = splitList(args.server, { ws: SERVER_NAMES, http: HTTP_SERVER_NAMES, rpc: RPC_PEER_NAMES }, 'server');
  for (const suite of ['ws', 'http', 'rpc']) {
    picked.scenario[suite] = scenarios[suite]?.join(',');
    picked.server[suite] = servers[suite]?.join(',');
    selected[suite] = scenarios[suite]?.length !== 0 && servers[suite]?.length !== 0;
  }
}

/** Run the RPC suite (benchmarks/rpc/run.mjs) with this command's options; returns its exit status. */
function runRpcSuite(outDir) {
  const forward = [];
  if (args.quick) forward.push('--quick');
  if (args['no-build']) forward.push('--no-build');
  if (args.render) forward.push('--render');
  if (picked.scenario.rpc) forward.push('--scenario', picked.scenario.rpc);
  if (picked.server.rpc) forward.push('--peer', picked.server.rpc);
  if (outDir) forward.push('--out', outDir);
  const r = spawnSync(process.execPath, [path.join(benchDir, 'rpc', 'run.mjs'), ...forward], { stdio: 'inherit' });
  return r.status ?? 1;
}
if (args.suite === 'rpc') {
  if (args['update-readme']) {
    console.error('--update-readme is for the WebSocket and HTTP suites only');
    process.exit(2);
  }
  process.exit(runRpcSuite(args.out ? path.resolve(args.out) : undefined));
}
const localSuites = ['ws', 'http'].filter((s) => selected[s]).map((s) => SUITES[s]);
if (!localSuites.length) {
  process.exit(runRpcSuite(args.out ? path.resolve(args.out) : undefined));
}

// ------------------------------------------------------------ progress display

const { log, status } = progressDisplay();

// ------------------------------------------------------------ report-only modes

function render(suite, outDir) {
  const file = path.join(outDir, suite.jsonFile);
  if (args.suite === 'all' && !existsSync(file)) return;
  const results = JSON.parse(readFileSync(file, 'utf8'));
  writeFileSync(path.join(outDir, suite.mdFile), suite.renderMarkdown(results, { benchRel: benchLink(outDir) }));
  const charts = suite.writeCharts(results, outDir);
  log(`rendered ${path.join(outDir, suite.mdFile)} and ${charts.length} chart(s) from ${file}`);
}

if (args.render || args['update-readme']) {
  const outDir = path.resolve(args.out ?? defaultOut);
  if (args.render) for (const suite of localSuites) render(suite, outDir);
  if (args['update-readme']) {
    if (args.suite === 'all') {
      console.error('--update-readme takes one suite: --suite ws (the default) or --suite http');
      process.exit(2);
    }
    const suite = localSuites[0];
    const results = JSON.parse(readFileSync(path.join(outDir, suite.jsonFile), 'utf8'));
    if (results.mode !== 'full' || results.partial) {
      console.error(`${outDir}/${suite.jsonFile} is from a ${results.partial ? 'partial' : results.mode} run: only a full run's results belong in the README`);
      process.exit(1);
    }
    updateReadme(path.join(benchDir, 'README.md'), path.join(outDir, suite.mdFile), suite.readmeMarkers);
    log(`updated the ${suite.title} results section of ${path.join(benchDir, 'README.md')} from ${path.join(outDir, suite.mdFile)}`);
  }
  if (selected.rpc && args.render) process.exit(runRpcSuite(outDir));
  process.exit(0);
}

// ------------------------------------------------------------ the run

const quick = args.quick;
const selections = localSuites.map((suite) => {
  const scenarios = parseList(picked.scenario[suite.name], suite.scenarioNames, 'scenario');
  let servers = parseList(picked.server[suite.name], suite.serverNames, 'server', suite.defaultServerNames).map((n) => suite.serverByName(n));
  // Without --server, a server that runs none of the chosen scenarios is not part of the run
  // (`--scenario cross-node`: Switchboard and Socket.IO only); one named there gets a note instead.
  if (!picked.server[suite.name] && suite.name === 'ws') servers = servers.filter((s) => scenarios.some((sc) => runsScenario(s, sc)));
  // A full run of every scenario against every server of the suite (its opt-in ones aside).
  const complete =
    !quick &&
    scenarios.length === suite.scenarioNames.length &&
    servers.length === suite.defaultServerNames.length &&
    servers.every((s) => suite.defaultServerNames.includes(s.name));
  return { suite, scenarios, servers, complete };
});
// The committed results are a full run of everything; anything else goes to
// a temp dir unless --out says where, so a partial run never overwrites them.
const complete = selections.every((s) => s.complete);
const outDir = path.resolve(
  args.out ?? (complete ? defaultOut : mkdtempSync(path.join(os.tmpdir(), `switchboard-bench-${quick ? 'quick' : 'partial'}-`))),
);
mkdirSync(outDir, { recursive: true });

const startedHr = process.hrtime.bigint();
const pin = pinning();
const fd = fdLimits();

const prepareStarted = Date.now();
if (!args['no-build']) {
  try {
    prepare({ root, servers: selections.flatMap((s) => s.servers), log });
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
const machine = machineInfo(root);

// Interrupted (Ctrl-C): the suite in progress writes what it has.
let writeCurrent = () => {};
const runs = guardRuns({ log, outDir: () => outDir, writeResults: () => writeCurrent() });

/** One suite's runs, results file, page and charts; returns its number of failed runs. */
async function runSuite({ suite, scenarios, servers, complete: suiteComplete }) {
  const startedAt = new Date();
  const measureStarted = Date.now();
  const cleanup = suite.setup();
  try {
    const serverMeta = servers.map((s) => {
      const versions = serverVersions(s, { root, machine });
      return {
        name: s.name, label: s.label, short: s.short ?? s.label, protocol: s.protocol, ...(s.versus ? { versus: s.versus } : {}),
        ...(s.nodes ? { nodes: s.nodes } : {}),
        env: s.env ?? {}, versions, versions_text: describeVersions(versions),
      };
    });
    const { configs, notes } = suite.buildMatrix({ quick, scenarios, fd });
    if (!pin.pinned) notes.push(`Unpinned: ${pin.reason}. The server and the load generator shared the CPUs.`);

    // Configuration-major order: every server runs a configuration before the
    // next one starts, so a noisy neighbour on this shared machine spreads over
    // all servers instead of landing on one.
    const plan = [];
    for (const c of configs) for (const s of servers) if (runsScenario(s, c.scenario)) plan.push({ ...c, server: s });
    for (const s of servers) {
      // One note per reason: a server may skip scenarios for different ones.
      const why = new Map();
      for (const sc of scenarios.filter((sc) => !runsScenario(s, sc))) {
        const reason = skipReason(s, sc);
        why.set(reason, [...(why.get(reason) ?? []), sc]);
      }
      for (const [reason, skipped] of why) notes.push(`${s.label}: ${skipped.join(', ')} not run: ${reason}.`);
    }

    const results = {
      schema_version: 1,
      suite: suite.name,
      file: suite.jsonFile,
      mode: quick ? 'quick' : 'full',
      partial: !suiteComplete && !quick,
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
    if (suite.name === 'ws') delete results.file; // the WebSocket suite's results.json keeps its earlier shape

    const writeResults = () => {
      results.finished_at = new Date().toISOString();
      results.duration_s = Number(process.hrtime.bigint() - startedHr) / 1e9;
      results.measure_s = (Date.now() - measureStarted) / 1000;
      results.load_average.end = loadAverage();
      // Written after every run, so an interrupted suite still leaves its figures.
      writeFileSync(path.join(outDir, suite.jsonFile), `${JSON.stringify(results, null, 2)}\n`);
    };
    writeCurrent = writeResults;

    const expectedTotal = plan.reduce((a, r) => a + r.expectedS + 1, 0);
    log(
      `${localSuites.length > 1 ? `${suite.title} suite: ` : ''}${plan.length} runs (${results.mode} mode), about ${Math.ceil(expectedTotal / 60)} min; ` +
        (pin.pinned ? `server on CPU ${pin.server_cpu}, load generator on CPU ${pin.loadgen_cpu}` : `unpinned (${pin.reason})`) +
        `; results in ${outDir}`,
    );
    for (const note of notes) log(`note: ${note}`);

    let failures = 0;
    for (const [i, item] of plan.entries()) {
      const label = suite.configLabel(item.scenario, item.config);
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
        const where = { root, binDir: binDir(), cpu: pin.pinned ? pin.server_cpu : null, env: suite.serverEnv };
        // Two nodes and a Redis (cross-node), or one server.
        server = item.server.nodes
          ? await startTopology(item.server, { ...where, sideCpu: pin.pinned ? pin.loadgen_cpu : null })
          : await startServer(item.server, where);
        const current = runs.begin();
        current.server = server;
        record.server_process = { pid: server.pid, port: server.port, command: server.command, cpus_allowed: server.cpus };
        if (server.topology) record.topology = server.topology;
        const sideCpuBefore = server.cpuSeconds?.();
        const sideWallBefore = performance.now();
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
          args: [...suite.loadgenArgs(item), ...(server.loadgenArgs ?? [])],
          // Generous: connecting thousands of clients and slow servers take time;
          // the limit only catches a hung run.
          timeoutMs: (item.expectedS * 2 + 60 + item.config.connections / 200) * 1000,
          onSpawn: (child) => (current.client = child),
          onProgress: (text) => status(`${prefix} … ${text}`),
          onStep: (step) => {
            // The step is printed as its measured window ends.
            const now = performance.now();
            cores.push(sampler.window(now - (step.duration_s ?? 0) * 1000, now));
            if (item.scenario !== 'ws-broadcast-room' && item.scenario !== 'cross-node') return;
            const l = step.latency_us ?? {};
            log(
              `      ${item.server.name} R=${step.rate}/s → ${si(step.received_per_s)} delivered/s, mean ${ms(l.mean / 1000)} ms, p99 ${ms(l.p99 / 1000)} ms ` +
                `(server cpu ${pct(step.server?.cpu_util)}, loadgen cpu ${pct(step.loadgen?.cpu_util)})`,
            );
          },
        });
        record.loadgen = describeRun(run);
        sampler.stop();
        if (sideCpuBefore) {
          // Node A's and Redis's CPU over the whole run (warm-ups included): what the load generator's core gave them.
          const after = server.cpuSeconds();
          const wall = (performance.now() - sideWallBefore) / 1000;
          for (const k of ['publisher', 'redis']) {
            const used = after[k] !== null && sideCpuBefore[k] !== null ? after[k] - sideCpuBefore[k] : null;
            record.topology[k].cpu_s = used;
            record.topology[k].cpu_util = used === null ? null : Math.round((used / wall) * 1000) / 1000;
          }
        }
        record.steps = run.steps;
        record.cores = cores;
        record.summary = suite.summarize(item.scenario, run.steps, { cores, pin, config: item.config });
        if (!server.running()) {
          const e = await server.exited;
          record.error = `${e.which ? `${e.which} of the topology` : 'the server'} exited during the run (code ${e.code}, signal ${e.signal}): ${server.output().trim().split('\n').slice(-5).join(' | ')}`;
        } else if (run.error) record.error = `cannot run the load generator: ${run.error}`;
        else if (run.timedOut) record.error = `the load generator did not finish in time and was stopped`;
        else if (run.code !== 0) {
          record.error =
            `the load generator exited with ${run.code ?? run.signal}: ` +
            (suite.failure(run.steps) ?? run.stderr.trim().split('\n').slice(-3).join(' | '));
        } else if (!run.steps.length) record.error = 'the load generator printed no result';
        // What the server printed is often why (a handler error, a replaced worker).
        if (record.error && server.running()) record.server_output = server.output().trim().split('\n').slice(-20).join('\n') || undefined;
      } catch (err) {
        record.error = err.message;
      } finally {
        if (server) await server.stop();
        runs.end();
      }
      // A run that failed scores nothing: its figures stay in `steps` only.
      if (record.error && suite.name === 'http') record.summary = null;
      results.runs.push(record);
      writeResults();
      if (record.error) {
        failures++;
        log(`${prefix} … FAILED: ${record.error.split('\n')[0]}`);
        const detail = record.error.split('\n').slice(1).join('\n');
        if (detail) log(detail);
      } else {
        log(`${prefix} … ${suite.outcome(item.scenario, record.summary)}`);
      }
    }

    writeResults();
    writeFileSync(path.join(outDir, suite.mdFile), suite.renderMarkdown(results, { benchRel: benchLink(outDir) }));
    const charts = suite.writeCharts(results, outDir);
    const clientBound = results.runs.filter((r) => r.summary?.bound === 'client' || r.summary?.bound === 'both').length;
    log(
      `\n${localSuites.length > 1 ? `${suite.title} suite ` : ''}done in ${Math.round(results.measure_s)} s` +
        `${suite === localSuites[0] ? ` (build ${Math.round(prepareS)} s before)` : ''}: ` +
        `${plan.length - failures}/${plan.length} runs succeeded` +
        `${clientBound ? `, ${clientBound} with the load generator saturated (marked in ${suite.mdFile})` : ''}.`,
    );
    log(`results: ${[path.join(outDir, suite.jsonFile), path.join(outDir, suite.mdFile), ...charts.map((c) => path.join(outDir, c))].join(', ')}`);
    // Last, so it ends the suite's output (CI's included): the figures a regression moves.
    const summary = suite.summaryLines(results);
    if (summary) log(`\n${summary.join('\n')}`);
    return failures;
  } finally {
    writeCurrent = () => {};
    cleanup();
  }
}

/** The one-line outcome of a WebSocket run for the progress display. */
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
    case 'cross-node':
    case 'ws-broadcast-room': {
      const moderate = summary.moderate
        ? `at ${si(summary.moderate.target_delivered_per_s)}/s p50 ${ms(summary.moderate.p50_ms)} ms, p99 ${ms(summary.moderate.p99_ms)} ms; `
        : '';
      const rate =
        summary.saturation_kind === 'below'
          ? `over the limit at the first step`
          : `${summary.saturation_kind === 'at_least' ? '≥ ' : ''}${si(summary.saturation_rate)} delivered/s within the limit`;
      return `${moderate}${rate}, ${summary.points.length} steps (at the limit step: ${cpu(summary.limit_step)})${flag(summary)}`;
    }
    default:
      return '';
  }
}

let failures = 0;
for (const selection of selections) failures += await runSuite(selection);
// --suite all: the RPC suite next, into the same folder.
const rpcStatus = selected.rpc ? runRpcSuite(outDir) : 0;
process.exit(failures || rpcStatus ? 1 : 0);
