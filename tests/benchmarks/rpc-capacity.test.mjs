// The RPC suite's server-capacity script keeps working:
// `node benchmarks/rpc/capacity.mjs --quick` runs tiny-response (both of its
// configurations) against Switchboard and qrpc with the native client
// (switchboard-rpcload) for half a second each and writes sane results.
// Like rpc-harness.test.mjs it asserts the shape of the results and that
// every call was answered right, never a speed. The runs take about ten
// seconds; building the client the first time takes longer.
//
// Run: node --test tests/benchmarks/rpc-capacity.test.mjs
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { scriptRunner } from './run-script.mjs';

// The runs take seconds; the first build of the client (and the first
// `npm install` of the peers) takes longer.
const RUN_TIMEOUT_MS = 10 * 60_000;
const PEERS = ['switchboard', 'qrpc'];
const LABELS = ['c=10 k=10', 'c=10 k=100'];

const { out, runChecked } = scriptRunner('rpc-capacity-test', RUN_TIMEOUT_MS);

const ARGS = [
  'benchmarks/rpc/capacity.mjs', '--quick',
  '--scenario', 'tiny-response',
  '--peer', PEERS.join(','),
  '--warmup', '0.2', '--duration', '0.5',
  '--out', out,
];

const finite = (v) => typeof v === 'number' && Number.isFinite(v);

test('benchmarks/rpc/capacity.mjs measures servers with the native client', { timeout: RUN_TIMEOUT_MS + 60_000 }, (t) => runChecked(t, 'capacity run', ARGS, 30, checkResults));

function checkResults() {
  const results = JSON.parse(readFileSync(path.join(out, 'rpc-capacity.json'), 'utf8'));
  assert.equal(results.suite, 'rpc-capacity');
  assert.equal(results.mode, 'quick');
  assert.equal(results.client.name, 'switchboard-rpcload');
  assert.deepEqual(results.timing, { warmup: 0.2, duration: 0.5 });
  assert.deepEqual(results.peers.map((p) => p.name), PEERS);
  assert.equal(results.runs.length, LABELS.length * PEERS.length);

  for (const label of LABELS) {
    for (const peer of PEERS) {
      const what = `tiny-response ${label} ${peer}`;
      const r = results.runs.find((x) => x.scenario === 'tiny-response' && x.label === label && x.peer === peer);
      assert.ok(r, `${what}: no run`);
      assert.equal(r.error, null, `${what}: ${r.error}`);
      assert.equal(r.steps.length, 1, `${what}: one step`);
      const step = r.steps[0];
      assert.equal(step.type, 'step');
      assert.equal(step.client, 'switchboard-rpcload');
      assert.equal(step.peer, peer);
      assert.equal(step.connected, 10, `${what}: every connection open to the end`);
      assert.ok(step.ops > 0 && finite(step.ops_per_s) && step.ops_per_s > 0, `${what}: ops ${step.ops}, ${step.ops_per_s}/s`);
      assert.ok(step.duration_s > 0.3 && step.duration_s < 5, `${what}: measured for ${step.duration_s} s`);
      // Every answer was checked and right; no connection was lost.
      assert.deepEqual(step.errors, { connect: 0, closed: 0, protocol: 0, bad: 0, first: null }, `${what}: errors`);
      const l = step.latency_us;
      assert.ok(l && l.count === step.ops, `${what}: a latency per call`);
      assert.ok(l.p50 > 0 && l.p50 <= l.p99 && l.p99 <= l.max, `${what}: percentiles in order (${JSON.stringify(l)})`);
      for (const side of ['server', 'loadgen']) {
        assert.ok(finite(step[side]?.cpu_util) && step[side].cpu_util >= 0 && step[side].cpu_util < 2, `${what}: ${side} cpu ${step[side]?.cpu_util}`);
        assert.ok(finite(step[side].cpu_ns_per_call) && step[side].cpu_ns_per_call >= 0, `${what}: ${side} cpu per call`);
        assert.ok(step[side].rss_kb > 0, `${what}: ${side} rss`);
      }
      assert.ok(['server', 'client', 'both', 'neither'].includes(r.summary.bound), `${what}: bound ${r.summary.bound}`);
      if (results.pinning.pinned) assert.deepEqual(r.server_process.cpus_allowed, [results.pinning.server_cpu], `${what}: server pinned`);
    }
    const c = results.comparisons.find((x) => x.scenario === 'tiny-response' && x.label === label && x.vs === 'qrpc');
    assert.ok(c && finite(c.throughput) && c.throughput > 0 && finite(c.latency_p50) && c.latency_p50 > 0, `${label}: Switchboard over qrpc`);
  }

  assert.ok(existsSync(path.join(out, 'rpc-capacity.md')), 'rpc-capacity.md is written');
  const md = readFileSync(path.join(out, 'rpc-capacity.md'), 'utf8');
  assert.match(md, /^## Results$/m);
  assert.match(md, /\| vs qrpc \|/);
  assert.match(md, /^- tiny-response c=10 k=10: Switchboard .* calls\/s, qrpc /m);
}
