#!/usr/bin/env node
// Server capacity: the RPC suite's small-call scenarios with a native client
// (switchboard-rpcload, benchmarks/loadgen) instead of a Node process, so
// that the server, not the client, is the limit (README.md, "Server
// capacity: a native client").
//
//   node benchmarks/rpc/capacity.mjs [--quick] [--scenario tiny-response,fast-reply,serial-rtt]
//                                    [--peer switchboard,qrpc,http] [--out DIR] [--no-build]
//                                    [--warmup S] [--duration S]
//   node benchmarks/rpc/capacity.mjs --render [--out DIR]     re-render rpc-capacity.md from rpc-capacity.json
//
// For every configuration, for every peer: start the peer's server (the
// same script as run.mjs) pinned to one core, run switchboard-rpcload
// pinned to the other, keep the JSON step it prints, stop the server.
// Writes rpc-capacity.json and rpc-capacity.md. Progress on stderr.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { pct, si } from '../harness/format.mjs';
import { loadAverage, machineInfo, pinning } from '../harness/machine.mjs';
import { binDir, prepare } from '../harness/prepare.mjs';
import { SATURATED } from '../harness/report.mjs';
import { describeVersions, serverVersions } from '../harness/servers.mjs';
import {
  CAPACITY_PEERS,
  CAPACITY_SCENARIO_NAMES,
  capacityMatrix,
  capacityTiming,
  comparisons,
  renderCapacity,
} from './lib/capacity.mjs';
import { RPC_RUNNER_OPTIONS, guardRuns, parseCommandLine, progressDisplay, rpcRunSelection } from '../harness/cli.mjs';
import { measure } from './lib/measure.mjs';
import { peerByName } from './lib/peers.mjs';

const rpcDir = path.dirname(fileURLToPath(import.meta.url));
const benchDir = path.dirname(rpcDir);
const root = path.dirname(benchDir);
const defaultOut = path.join(benchDir, 'results');
const JSON_FILE = 'rpc-capacity.json';
const MD_FILE = 'rpc-capacity.md';
const BINARY = 'switchboard-rpcload';

const USAGE = `usage: node benchmarks/rpc/capacity.mjs [options]
  --quick                 every run, 0.25 s warm-up and 1 s measured; results go to a temp dir
  --scenario LIST         comma-separated: ${CAPACITY_SCENARIO_NAMES.join(',')}
  --peer LIST             comma-separated: ${CAPACITY_PEERS.join(',')}
  --out DIR               where ${JSON_FILE} and ${MD_FILE} go
                          (default: benchmarks/results for a full run of everything, else a temp dir)
  --warmup S, --duration S  seconds per run (default 2 and 5; quick 0.25 and 1)
  --no-build              skip the build steps (Switchboard, the peers' npm install, cargo build of the client)
  --render                only re-render ${MD_FILE} from DIR/${JSON_FILE}
  --help`;

const args = parseCommandLine(USAGE, RPC_RUNNER_OPTIONS);

const { log, status } = progressDisplay();
const readJson = (file) => {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return null;
  }
};
/** The Node client's figures for the same configurations (the committed full run), shown beside ours. */
const nodeResults = () => readJson(path.join(defaultOut, 'rpc-results.json'));
const rpcLink = (outDir) => (path.relative(root, outDir).startsWith('..') ? rpcDir : path.relative(outDir, rpcDir));
const render = (results, outDir) =>
  writeFileSync(path.join(outDir, MD_FILE), renderCapacity(results, { nodeResults: nodeResults(), rpcRel: rpcLink(outDir) }));

if (args.render) {
  const outDir = path.resolve(args.out ?? defaultOut);
  render(JSON.parse(readFileSync(path.join(outDir, JSON_FILE), 'utf8')), outDir);
  log(`rendered ${path.join(outDir, MD_FILE)} from ${path.join(outDir, JSON_FILE)}`);
  process.exit(0);
}

// ------------------------------------------------------------ the run

const { quick, warmup, duration, scenarios, peers: peerNames, complete, outDir } = rpcRunSelection(args, {
  scenarioNames: CAPACITY_SCENARIO_NAMES,
  peerNames: CAPACITY_PEERS,
  defaultOut,
  name: 'switchboard-rpc-capacity',
});
const peers = peerNames.map(peerByName);

const startedAt = new Date();
const pin = pinning();
const timing = capacityTiming({ quick, warmup, duration });

if (!args['no-build']) {
  try {
    // Switchboard, the peers' npm packages, and `cargo build --release -p
    // switchboard-loadgen`, which builds switchboard-rpcload too.
    prepare({ root, servers: peers, log, loadgen: true });
  } catch (err) {
    console.error(`\nbuild failed: ${err.message}`);
    process.exit(1);
  }
}
const binary = path.join(binDir(), BINARY);
if (!existsSync(binary)) {
  console.error(`${binary} is missing: run without --no-build, or cargo build --release -p switchboard-loadgen`);
  process.exit(1);
}
const machine = machineInfo(root);

const results = {
  schema_version: 1,
  suite: 'rpc-capacity',
  mode: quick ? 'quick' : 'full',
  partial: !complete && !quick,
  command: `node benchmarks/rpc/capacity.mjs ${process.argv.slice(2).join(' ')}`.trim(),
  started_at: startedAt.toISOString(),
  finished_at: null,
  duration_s: null,
  timing,
  machine,
  pinning: pin,
  load_average: { start: loadAverage(), end: null },
  saturation_threshold: SATURATED,
  client: { name: BINARY, binary },
  peers: peers.map((p) => {
    const versions = serverVersions(p, { root, machine });
    if (p.node) versions.node = process.version;
    return { name: p.name, label: p.label, short: p.short ?? p.label, protocol: p.protocol, versions, versions_text: describeVersions(versions), settings: p.settings ?? null };
  }),
  runs: [],
  comparisons: [],
};

function writeResults() {
  results.finished_at = new Date().toISOString();
  results.duration_s = Math.round((Date.now() - startedAt.getTime()) / 100) / 10;
  results.load_average.end = loadAverage();
  results.comparisons = comparisons(results.runs);
  writeFileSync(path.join(outDir, JSON_FILE), `${JSON.stringify(results, null, 2)}\n`);
}

const runs = guardRuns({ log, outDir: () => outDir, writeResults });

// Configuration-major order, as run.mjs: a disturbance on a shared machine
// spreads over all peers instead of landing on one.
const plan = [];
for (const item of capacityMatrix(scenarios)) for (const peer of peers) plan.push({ ...item, peer });
const expectedS = timing.warmup + timing.duration + 1;
log(
  `RPC capacity: ${plan.length} runs, about ${Math.ceil((plan.length * expectedS) / 60)} min; ` +
    (pin.pinned ? `servers on CPU ${pin.server_cpu}, ${BINARY} on CPU ${pin.loadgen_cpu}` : `unpinned (${pin.reason})`) +
    `; results in ${outDir}`,
);

let failures = 0;
for (const [i, item] of plan.entries()) {
  const { peer } = item;
  const prefix = `[${i + 1}/${plan.length}] ${item.scenario} ${item.label} ${peer.name}`;
  status(`${prefix} … starting`);
  const current = runs.begin();
  const record = {
    scenario: item.scenario,
    peer: peer.name,
    label: item.label,
    config: item.config,
    ...(await measure({
      root,
      peer,
      // serial-rtt "one core": the client on the server's core.
      pin: item.oneCore && pin.pinned ? { ...pin, loadgen_cpu: pin.server_cpu } : pin,
      client: { binary, args: [...item.args, '--warmup', String(timing.warmup), '--duration', String(timing.duration)] },
      timeoutMs: (timing.warmup + timing.duration) * 2000 + 30_000,
      limitS: Math.ceil(expectedS * 3 + 60),
      track: current,
      onProgress: (text) => status(`${prefix} … ${text}`),
    })),
  };
  runs.end();
  results.runs.push(record);
  writeResults();
  const s = record.summary;
  if (record.error) {
    failures++;
    log(`${prefix} … FAILED: ${record.error.split('\n')[0]}`);
  } else {
    const l = s.latency_us;
    const flag = s.bound === 'client' ? ' CLIENT-BOUND' : s.bound === 'both' ? ' both saturated' : '';
    log(`${prefix} … ${si(s.ops_per_s)} calls/s, p50 ${l?.p50} µs, mean ${l?.mean} µs (server cpu ${pct(s.server_cpu)}, client cpu ${pct(s.loadgen_cpu)})${flag}`);
  }
}

writeResults();
render(results, outDir);
log(`\nRPC capacity done in ${Math.round(results.duration_s)} s: ${plan.length - failures}/${plan.length} runs succeeded.`);
log(`results: ${path.join(outDir, JSON_FILE)}, ${path.join(outDir, MD_FILE)}`);
process.exit(failures ? 1 : 0);
