#!/usr/bin/env node
// The RPC benchmark suite in one command (method and mappings: README.md,
// the adapter contract: ADAPTERS.md).
//
//   node benchmarks/rpc/run.mjs [--quick] [--scenario tiny-response,...] [--peer http,grpc,...]
//                               [--out DIR] [--no-build] [--warmup S] [--duration S]
//   node benchmarks/rpc/run.mjs --render [--out DIR]     re-render rpc-results.md from rpc-results.json
//
// For every configuration of every scenario, for every peer: start the
// peer's server pinned to one core, run the driver (a Node process with the
// peer's client adapter) pinned to the other, keep the step it prints, stop
// the server. Writes rpc-results.json and rpc-results.md. Progress on stderr.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { pct, si } from '../harness/format.mjs';
import { loadAverage, machineInfo, pinning } from '../harness/machine.mjs';
import { prepare } from '../harness/prepare.mjs';
import { SATURATED } from '../harness/report.mjs';
import { describeVersions, serverVersions } from '../harness/servers.mjs';
import { RPC_RUNNER_OPTIONS, guardRuns, parseCommandLine, progressDisplay, rpcRunSelection } from '../harness/cli.mjs';
import { measure } from './lib/measure.mjs';
import { PEER_NAMES, peerByName } from './lib/peers.mjs';
import { renderMarkdown } from './lib/report.mjs';
import { SCENARIO_NAMES, buildMatrix, scenarioByName, timing } from './lib/scenarios.mjs';

const rpcDir = path.dirname(fileURLToPath(import.meta.url));
const benchDir = path.dirname(rpcDir);
const root = path.dirname(benchDir);
const defaultOut = path.join(benchDir, 'results');
const driver = path.join(rpcDir, 'driver.mjs');
const JSON_FILE = 'rpc-results.json';
const MD_FILE = 'rpc-results.md';

const USAGE = `usage: node benchmarks/rpc/run.mjs [options]
  --quick                 every scenario and peer, small sizes, ~1 s per run; results go to a temp dir
  --scenario LIST         comma-separated: ${SCENARIO_NAMES.join(',')}
  --peer LIST             comma-separated: ${PEER_NAMES.join(',')}
  --out DIR               where rpc-results.json and rpc-results.md go
                          (default: benchmarks/results for a full run of everything, else a temp dir)
  --warmup S, --duration S  override the warm-up and measured seconds per run (default 1 and 5; quick 0.25 and 1)
  --no-build              skip the build steps (Switchboard, the peers' npm install)
  --render                only re-render rpc-results.md from DIR/rpc-results.json
  --help`;

const args = parseCommandLine(USAGE, RPC_RUNNER_OPTIONS);

const { log, status } = progressDisplay();

/** How rpc-results.md links to this folder: relative inside the clone, absolute from a temp dir. */
function rpcLink(outDir) {
  return path.relative(root, outDir).startsWith('..') ? rpcDir : path.relative(outDir, rpcDir);
}

if (args.render) {
  const outDir = path.resolve(args.out ?? defaultOut);
  const results = JSON.parse(readFileSync(path.join(outDir, JSON_FILE), 'utf8'));
  writeFileSync(path.join(outDir, MD_FILE), renderMarkdown(results, { rpcRel: rpcLink(outDir) }));
  log(`rendered ${path.join(outDir, MD_FILE)} from ${path.join(outDir, JSON_FILE)}`);
  process.exit(0);
}

// ------------------------------------------------------------ the run

const { quick, warmup, duration, scenarios, peers: peerNames, complete, outDir } = rpcRunSelection(args, {
  scenarioNames: SCENARIO_NAMES,
  peerNames: PEER_NAMES,
  defaultOut,
  name: 'switchboard-rpc-bench',
});
const peers = peerNames.map(peerByName);

const startedAt = new Date();
const startedHr = process.hrtime.bigint();
const pin = pinning();

const prepareStarted = Date.now();
if (!args['no-build']) {
  try {
    // The load runs in Node here: no load generator binary to build.
    prepare({ root, servers: peers, log, loadgen: false });
  } catch (err) {
    console.error(`\nbuild failed: ${err.message}`);
    process.exit(1);
  }
}
const prepareS = (Date.now() - prepareStarted) / 1000;
const measureStarted = Date.now();
const machine = machineInfo(root);

const peerMeta = peers.map((p) => {
  const versions = serverVersions(p, { root, machine });
  if (p.node) versions.node = process.version;
  return {
    name: p.name,
    label: p.label,
    short: p.short ?? p.label,
    protocol: p.protocol,
    env: p.env ?? {},
    versions,
    versions_text: describeVersions(versions),
    settings: p.settings ?? null,
    unsupported: p.unsupported ?? {},
    mappings: p.mappings ?? {},
  };
});
const matrix = buildMatrix({ quick, scenarios, warmup, duration });
const notes = [];
if (!pin.pinned) notes.push(`Unpinned: ${pin.reason}. The server and the client shared the CPUs.`);

// Configuration-major order, as the WebSocket suite: a disturbance on this
// shared machine spreads over all peers instead of landing on one.
const plan = [];
for (const item of matrix) for (const peer of peers) plan.push({ ...item, peer });

const results = {
  schema_version: 1,
  suite: 'rpc',
  mode: quick ? 'quick' : 'full',
  partial: !complete && !quick,
  command: `node benchmarks/rpc/run.mjs ${process.argv.slice(2).join(' ')}`.trim(),
  started_at: startedAt.toISOString(),
  finished_at: null,
  duration_s: null,
  build_s: Math.round(prepareS * 10) / 10,
  measure_s: null,
  timing: timing({ quick, warmup, duration }),
  machine,
  pinning: pin,
  load_average: { start: loadAverage(), end: null },
  saturation_threshold: SATURATED,
  notes,
  scenarios: scenarios.map((name) => {
    const s = scenarioByName(name);
    return { name, title: s.title, unit: s.unit, requires: s.requires };
  }),
  peers: peerMeta,
  runs: [],
};

function writeResults() {
  results.finished_at = new Date().toISOString();
  results.duration_s = Number(process.hrtime.bigint() - startedHr) / 1e9;
  results.measure_s = (Date.now() - measureStarted) / 1000;
  results.load_average.end = loadAverage();
  writeFileSync(path.join(outDir, JSON_FILE), `${JSON.stringify(results, null, 2)}\n`);
}

function outcome(s) {
  if (!s) return 'no result';
  const l = s.latency_us;
  const lat = l ? `, p50 ${si(l.p50)} µs, p99 ${si(l.p99)} µs` : '';
  const extra = s.responses_per_s ? ` (${si(s.responses_per_s)} responses/s)` : s.bytes_per_s ? ` (${(s.bytes_per_s / 2 ** 20).toFixed(0)} MiB/s)` : '';
  const flag = s.bound === 'client' ? ' CLIENT-BOUND' : s.bound === 'both' ? ' both saturated' : '';
  return `${si(s.ops_per_s)} ${s.unit}/s${extra}${lat} (server cpu ${pct(s.server_cpu)}, client cpu ${pct(s.loadgen_cpu)})${flag}`;
}

const runs = guardRuns({ log, outDir: () => outDir, writeResults });

const runnable = plan.filter((r) => !r.peer.unsupported?.[r.scenario]);
const expectedTotal = runnable.reduce((a, r) => a + r.expectedS, 0);
log(
  `RPC suite: ${runnable.length} runs (${plan.length - runnable.length} not applicable), ${results.mode} mode, about ${Math.ceil(expectedTotal / 60)} min; ` +
    (pin.pinned ? `servers on CPU ${pin.server_cpu}, client on CPU ${pin.loadgen_cpu}` : `unpinned (${pin.reason})`) +
    `; results in ${outDir}`,
);

let failures = 0;
for (const [i, item] of plan.entries()) {
  const { peer } = item;
  const prefix = `[${i + 1}/${plan.length}] ${item.scenario} ${item.label} ${peer.name}`;
  const record = {
    scenario: item.scenario,
    peer: peer.name,
    label: item.label,
    config: item.config,
    skipped: peer.unsupported?.[item.scenario] ?? null,
    server_process: null,
    client: null,
    steps: [],
    cores: [],
    summary: null,
    error: null,
  };
  if (record.skipped) {
    results.runs.push(record);
    log(`${prefix} … n/a: ${record.skipped}`);
    continue;
  }
  status(`${prefix} … starting`);
  const current = runs.begin();
  Object.assign(
    record,
    await measure({
      root,
      peer,
      pin,
      client: {
        binary: process.execPath,
        binaryArgs: [driver],
        args: [
          '--scenario', item.scenario,
          '--config', JSON.stringify(item.config),
          '--warmup', String(item.warmup),
          '--duration', String(item.duration),
          '--client', peer.client,
        ],
      },
      timeoutMs: (item.warmup + item.duration) * 2000 + 60_000,
      limitS: Math.ceil(item.expectedS * 3 + 60),
      track: current,
      onProgress: (text) => status(`${prefix} … ${text}`),
    }),
  );
  runs.end();
  results.runs.push(record);
  writeResults();
  if (record.error) {
    failures++;
    log(`${prefix} … FAILED: ${record.error.split('\n')[0]}`);
  } else {
    log(`${prefix} … ${outcome(record.summary)}`);
  }
}

writeResults();
writeFileSync(path.join(outDir, MD_FILE), renderMarkdown(results, { rpcRel: rpcLink(outDir) }));
const clientBound = results.runs.filter((r) => r.summary?.bound === 'client' || r.summary?.bound === 'both').length;
log(
  `\nRPC suite done in ${Math.round(results.duration_s)} s (build ${Math.round(prepareS)} s): ` +
    `${runnable.length - failures}/${runnable.length} runs succeeded` +
    `${clientBound ? `, ${clientBound} with the client saturated (marked in ${MD_FILE})` : ''}.`,
);
log(`results: ${path.join(outDir, JSON_FILE)}, ${path.join(outDir, MD_FILE)}`);
process.exit(failures ? 1 : 0);
