// The RPC benchmark harness keeps working: `node benchmarks/rpc/run.mjs`
// runs a few scenarios against two peers for half a second each and writes
// sane results. Like harness.test.mjs it asserts the shape of the results,
// never a speed (a shared CI machine measures nothing worth asserting).
// The full quick run of every scenario and peer (`--quick`, about two
// minutes) is left to people changing the suite.
//
// Run: node --test tests/benchmarks/rpc-harness.test.mjs
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { scriptRunner } from './run-script.mjs';

// The runs take seconds; the first `npm install` of the peers takes longer.
const RUN_TIMEOUT_MS = 10 * 60_000;

// A call scenario, a streaming one and a bulk one; Switchboard (built first
// by the runner), an HTTP peer and a multiplexing one (one-way is checked
// too: http has no equivalent, so that run must be recorded as not
// applicable rather than failed).
const SCENARIOS = ['tiny-response', 'many-responses', 'payload-1mib', 'one-way'];
const PEERS = ['switchboard', 'http', 'qrpc'];

const { out, runChecked } = scriptRunner('rpc-bench-test', RUN_TIMEOUT_MS);

const ARGS = [
  'benchmarks/rpc/run.mjs', '--quick',
  '--scenario', SCENARIOS.join(','),
  '--peer', PEERS.join(','),
  '--warmup', '0.2', '--duration', '0.5',
  '--out', out,
];

const finite = (v) => typeof v === 'number' && Number.isFinite(v);

test('benchmarks/rpc/run.mjs measures every selected scenario and peer', { timeout: RUN_TIMEOUT_MS + 60_000 }, (t) => runChecked(t, 'RPC run', ARGS, 40, checkResults));

function checkResults() {
  const results = JSON.parse(readFileSync(path.join(out, 'rpc-results.json'), 'utf8'));
  assert.equal(results.suite, 'rpc');
  assert.equal(results.mode, 'quick');
  for (const key of ['cpu', 'kernel', 'node']) assert.ok(results.machine[key], `machine.${key} is recorded`);
  assert.equal(typeof results.pinning.pinned, 'boolean');
  assert.deepEqual(results.timing, { warmup: 0.2, duration: 0.5 });
  assert.deepEqual(results.peers.map((p) => p.name), PEERS);
  for (const p of results.peers) assert.ok(p.versions_text !== 'unknown', `${p.name}: versions recorded`);

  for (const scenario of SCENARIOS) {
    for (const peer of PEERS) {
      const runs = results.runs.filter((r) => r.scenario === scenario && r.peer === peer);
      assert.ok(runs.length > 0, `${scenario} ${peer}: no run`);
      for (const r of runs) {
        const what = `${scenario} ${r.label} ${peer}`;
        assert.equal(r.error, null, `${what}: ${r.error}`);
        if (r.skipped) {
          // Only what the peer registry declares as not applicable is skipped.
          assert.ok(results.peers.find((p) => p.name === peer).unsupported[scenario], `${what}: skipped without a reason`);
          assert.equal(r.steps.length, 0);
          continue;
        }
        assert.equal(r.steps.length, 1, `${what}: one step`);
        const step = r.steps[0];
        assert.equal(step.type, 'step');
        assert.ok(step.ops > 0, `${what}: ops ${step.ops}`);
        assert.ok(finite(step.ops_per_s) && step.ops_per_s > 0, `${what}: ops_per_s ${step.ops_per_s}`);
        assert.ok(step.duration_s > 0.3 && step.duration_s < 5, `${what}: measured for ${step.duration_s} s`);
        assert.deepEqual(step.errors, { failed: 0, bad: 0, first: null }, `${what}: errors`);
        // (A sender may spend a short window waiting for the transport to drain: sent can be 0.)
        if (scenario === 'one-way') assert.ok(Number.isInteger(step.sent) && step.sent >= 0, `${what}: sent ${step.sent}`);
        else {
          const l = step.latency_us;
          assert.ok(l && l.count === step.ops, `${what}: a latency per call`);
          assert.ok(l.p50 > 0 && l.p50 <= l.p99 && l.p99 <= l.max, `${what}: percentiles in order (${JSON.stringify(l)})`);
        }
        if (scenario === 'many-responses') assert.ok(step.responses_per_s >= step.ops_per_s * 100 * 0.99, `${what}: 100 responses per call`);
        if (scenario === 'payload-1mib') assert.ok(step.bytes_per_s > 0, `${what}: bytes/s`);
        // CPU and memory of both processes, read from /proc over the window.
        for (const side of ['server', 'loadgen']) {
          assert.ok(finite(step[side]?.cpu_util) && step[side].cpu_util >= 0 && step[side].cpu_util < 2, `${what}: ${side} cpu ${step[side]?.cpu_util}`);
          assert.ok(step[side].rss_kb > 0, `${what}: ${side} rss`);
        }
        assert.ok(['server', 'client', 'both', 'neither'].includes(r.summary.bound), `${what}: bound ${r.summary.bound}`);
        if (results.pinning.pinned) assert.deepEqual(r.server_process.cpus_allowed, [results.pinning.server_cpu], `${what}: server pinned`);
      }
    }
  }
  // http has no one-way message: recorded as not applicable, not run.
  assert.ok(results.runs.find((r) => r.scenario === 'one-way' && r.peer === 'http').skipped);

  assert.ok(existsSync(path.join(out, 'rpc-results.md')), 'rpc-results.md is written');
  const md = readFileSync(path.join(out, 'rpc-results.md'), 'utf8');
  for (const scenario of SCENARIOS) assert.match(md, new RegExp(`^## ${scenario}:`, 'm'), `rpc-results.md has a ${scenario} section`);
  assert.match(md, /\| n\/a \|/, 'not-applicable cells are marked');
}
