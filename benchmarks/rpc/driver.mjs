#!/usr/bin/env node
// The RPC suite's load generator: one Node process (pinned by the runner to
// the load CPU) that imports a peer's client adapter (ADAPTERS.md), opens
// its connections, runs one scenario against the peer's server, and prints
// one JSON step on stdout, as switchboard-loadgen does for the WebSocket
// suite (so benchmarks/harness/loadgen.mjs runs it):
//
//   node benchmarks/rpc/driver.mjs --port P --protocol PEER --server-pid PID
//        --scenario NAME --config JSON [--warmup S] [--duration S] [--client FILE] [--host H]
//
// `--protocol` is the peer's name; `--client` its adapter (default
// benchmarks/rpc/peers/<peer>/client.mjs). Progress lines go to stderr as
// `progress: ...`. Exit status: 0 the step is good; 1 calls failed or
// answers were wrong (the step is still printed when there is one); 2 bad
// arguments; 3 the adapter lacks a method the scenario needs.
//
// The step: { type: 'step', scenario, peer, config, duration_s, ops,
// ops_per_s, unit, responses_per_s, bytes_per_s, latency_us: { mean, p50,
// p90, p99, p999, max, count, sampled }, server: { cpu_util, cpu_s, rss_kb,
// rss_peak_kb }, loadgen: { ... the same for this process }, errors: {
// failed, bad, first }, sent (one-way) }.
import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep, setImmediate as tick } from 'node:timers/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { cpuSeconds, memoryKb } from './lib/proc.mjs';
import { Samples } from './lib/samples.mjs';
import { scenarioByName } from './lib/scenarios.mjs';
import { TINY, payloadOf } from './lib/wire.mjs';

const rpcDir = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(rpcDir, '..', '..');

function usage(message) {
  process.stderr.write(`${message}\nusage: node benchmarks/rpc/driver.mjs --port P --protocol PEER --scenario NAME --config JSON [--server-pid PID] [--warmup S] [--duration S] [--client FILE]\n`);
  process.exit(2);
}

let args;
try {
  ({ values: args } = parseArgs({
    options: {
      port: { type: 'string' },
      host: { type: 'string', default: '127.0.0.1' },
      protocol: { type: 'string' },
      'server-pid': { type: 'string' },
      scenario: { type: 'string' },
      config: { type: 'string' },
      warmup: { type: 'string', default: '1' },
      duration: { type: 'string', default: '5' },
      client: { type: 'string' },
    },
  }));
} catch (err) {
  usage(err.message);
}
if (!args.port || !args.protocol || !args.scenario || !args.config) usage('missing arguments');
let scenario;
try {
  scenario = scenarioByName(args.scenario);
} catch (err) {
  usage(err.message);
}
const config = JSON.parse(args.config);
const warmupS = Number(args.warmup);
const durationS = Number(args.duration);
const serverPid = args['server-pid'] ? Number(args['server-pid']) : null;
const clientFile = path.resolve(root, args.client ?? `benchmarks/rpc/peers/${args.protocol}/client.mjs`);

// Bounded whatever happens: the run's own length plus a generous margin for
// connecting and closing.
const hardLimit = setTimeout(() => {
  process.stderr.write(`driver: still running ${warmupS + durationS + 60} s after start: giving up\n`);
  process.exit(1);
}, (warmupS + durationS + 60) * 1000);
hardLimit.unref();

const progress = (text) => process.stderr.write(`progress: ${text}\n`);

// ------------------------------------------------------------ the operation

const tempFiles = [];
function cleanup() {
  for (const f of tempFiles) rmSync(f, { force: true });
}
process.on('exit', cleanup);

/** The call one scenario makes, and how its answer is checked. */
function operation() {
  const p = config.payload ?? 0;
  switch (scenario.name) {
    case 'heartbeat':
      return { op: (c) => c.ping(), check: () => true };
    case 'fast-reply':
      return { op: (c) => c.fast(), check: (v) => Number.isInteger(v) };
    case 'tiny-response':
    case 'serial-rtt':
    case 'parallel':
      return { op: (c) => c.call(TINY), check: (v) => v?.length === TINY.length };
    case 'payload-1mib':
    case 'payload-4mib': {
      const payload = payloadOf(p);
      return { op: (c) => c.upload(payload), check: (v) => v === p, bytes: p };
    }
    case 'file-1mib-memory':
    case 'file-1mib-disk': {
      const buffer = payloadOf(p);
      if (config.source !== 'disk') return { op: (c) => c.uploadFile({ buffer }), check: (v) => v === p, bytes: p };
      // A real file, written once; after the first read it is served from the page cache.
      const file = path.join(os.tmpdir(), `switchboard-rpc-${process.pid}-${randomBytes(4).toString('hex')}.bin`);
      writeFileSync(file, buffer);
      tempFiles.push(file);
      const source = { path: file, size: p };
      return { op: (c) => c.uploadFile(source), check: (v) => v === p, bytes: p };
    }
    case 'many-responses': {
      const n = config.responses;
      return { op: (c) => c.many(n), check: (v) => v === n, responses: n };
    }
    default:
      throw new Error(`no operation for ${scenario.name}`);
  }
}

// ------------------------------------------------------------ measurement

function snapshot() {
  return { t: performance.now(), server: serverPid ? cpuSeconds(serverPid) : null, self: process.cpuUsage() };
}

function processFigures(a, b, wallS, pid, self) {
  const mem = memoryKb(pid ?? 'self');
  const cpuS = self ? (b.self.user + b.self.system - a.self.user - a.self.system) / 1e6 : a.server === null || b.server === null ? null : b.server - a.server;
  const r = (v) => (v === null ? null : Math.round(v * 1000) / 1000);
  return { cpu_util: cpuS === null ? null : r(cpuS / wallS), cpu_s: r(cpuS), ...mem };
}

const state = { measuring: false, stop: false, ops: 0, failed: 0, bad: 0, first: null, sent: 0 };

function failure(err) {
  state.failed++;
  state.first ??= String(err?.message ?? err);
  // A peer that fails every call would spin: give up after a thousand.
  if (state.failed >= 1000) state.stop = true;
}

async function closedLoop(conn, { op, check }, samples) {
  while (!state.stop) {
    const t0 = performance.now();
    let v;
    try {
      v = await op(conn);
    } catch (err) {
      failure(err);
      await tick(); // let timers run even if every call rejects at once
      continue;
    }
    if (!state.measuring) continue;
    samples.add((performance.now() - t0) * 1000);
    state.ops++;
    if (!check(v)) {
      state.bad++;
      state.first ??= `unexpected answer: ${String(v).slice(0, 80)}`;
    }
  }
}

async function oneWaySender(conn) {
  let n = 0;
  while (!state.stop) {
    let ok;
    try {
      ok = conn.notify(TINY);
      if (ok === false) await conn.drain();
    } catch (err) {
      failure(err);
      await tick();
      continue;
    }
    state.sent++;
    // notify() may return true for a long while: yield so timers and I/O run.
    if ((++n & 255) === 0) await tick();
  }
}

async function settle(promises, ms) {
  await Promise.race([Promise.allSettled(promises), sleep(ms)]);
}

// ------------------------------------------------------------ the run

const adapter = await import(pathToFileURL(clientFile).href);
if (typeof adapter.connect !== 'function') {
  process.stderr.write(`${clientFile} exports no connect()\n`);
  process.exit(3);
}

const conns = [];
try {
  for (let i = 0; i < config.connections; i++) {
    conns.push(await adapter.connect({ host: args.host, port: Number(args.port), inFlight: config.in_flight ?? 1, scenario: scenario.name, config }));
  }
} catch (err) {
  process.stderr.write(`cannot connect: ${err?.stack ?? err}\n`);
  process.exit(1);
}
const missing = scenario.requires.filter((m) => typeof conns[0][m] !== 'function');
if (missing.length) {
  process.stderr.write(`the ${args.protocol} adapter has no ${missing.map((m) => `${m}()`).join(', ')}, which ${scenario.name} needs\n`);
  process.exit(3);
}

const samples = new Samples();
let loops;
let op = null;
if (scenario.name === 'one-way') {
  loops = conns.map((c) => oneWaySender(c));
} else {
  op = operation();
  loops = [];
  for (const c of conns) for (let k = 0; k < config.in_flight; k++) loops.push(closedLoop(c, op, samples));
}

progress(`warming up ${warmupS} s`);
await sleep(warmupS * 1000);

let start;
let end;
let received = null;
let sentInWindow = null;
if (scenario.name === 'one-way') {
  // The receiver's count before and after the window: messages it got,
  // whatever the sender's buffers held.
  const before = await conns[0].count();
  start = snapshot();
  const sent0 = state.sent;
  const ticker = setInterval(() => progress(`measuring, ${state.sent - sent0} sent`), 1000);
  await sleep(durationS * 1000);
  clearInterval(ticker);
  const after = await conns[0].count();
  end = snapshot();
  sentInWindow = state.sent - sent0;
  received = after - before;
} else {
  start = snapshot();
  state.measuring = true;
  const ticker = setInterval(() => progress(`measuring, ${state.ops} ${scenario.unit}`), 1000);
  await sleep(durationS * 1000);
  state.measuring = false;
  end = snapshot();
  clearInterval(ticker);
}

const wallS = (end.t - start.t) / 1000;
const ops = received ?? state.ops;
const step = {
  type: 'step',
  scenario: scenario.name,
  peer: args.protocol,
  config,
  duration_s: Math.round(wallS * 1000) / 1000,
  unit: scenario.unit,
  ops,
  ops_per_s: Math.round((ops / wallS) * 10) / 10,
  responses_per_s: op?.responses ? Math.round(((ops * op.responses) / wallS) * 10) / 10 : undefined,
  bytes_per_s: op?.bytes ? Math.round((ops * op.bytes) / wallS) : undefined,
  sent: sentInWindow ?? undefined,
  sent_per_s: sentInWindow === null ? undefined : Math.round((sentInWindow / wallS) * 10) / 10,
  latency_us: samples.summary(),
  server: serverPid ? processFigures(start, end, wallS, serverPid, false) : null,
  loadgen: processFigures(start, end, wallS, null, true),
  errors: { failed: state.failed, bad: state.bad, first: state.first },
};
process.stdout.write(`${JSON.stringify(step)}\n`);

// Stop: let calls in flight finish (bounded), close the connections (bounded).
state.stop = true;
await settle(loops, 10_000);
await settle(conns.map((c) => Promise.resolve().then(() => c.close?.())), 5_000);
// Judged on the run up to the end of the window (closing may fail calls of its own).
const ok = step.errors.failed === 0 && step.errors.bad === 0 && ops > 0;
if (!ok) process.stderr.write(`${step.errors.failed} failed, ${step.errors.bad} wrong answers, ${ops} ${scenario.unit}${step.errors.first ? `; first: ${step.errors.first}` : ''}\n`);
cleanup();
process.exit(ok ? 0 : 1);
