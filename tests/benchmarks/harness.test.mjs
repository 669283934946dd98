// The benchmark harness keeps working: `node benchmarks/run.mjs --quick`
// builds what it needs, runs every scenario against every server for a
// fraction of a second each, and writes its results. It asserts that every
// run produced figures, never how fast anything was (a shared CI machine
// measures nothing worth asserting). It does show the figures a regression
// would move: Switchboard's idle memory per connection and echo rates beside
// uWebSockets.js's, with the ratios, as diagnostics at the end of its output
// (`node --test --test-reporter=spec`, as `npm test` runs it, prints them
// under the test), so a 5x change is visible in CI's log at once.
//
// Run: node --test tests/benchmarks/
// Env: CARGO_TARGET_DIR / SB_CACHE as for scripts/run.mjs (the load generator
//      and the Tokio peer are built there).
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { scriptRunner } from './run-script.mjs';
import { regressionRows, regressionSummary } from '../../benchmarks/harness/summary.mjs';
import { runsScenario, serverByName } from '../../benchmarks/harness/servers.mjs';

// The quick run itself takes under a minute; the first build of the load
// generator, the Tokio peer and the peers' npm packages takes longer.
const RUN_TIMEOUT_MS = 15 * 60_000;

const SCENARIOS = ['ws-echo', 'ws-broadcast-room', 'ws-channels', 'ws-idle', 'cross-node'];
// The last three are two nodes on a Redis each, and run cross-node only (as
// do switchboard and socketio, as one node, of the others).
const SERVERS = [
  'switchboard', 'uws', 'ws', 'socketio', 'sockjs', 'switchboard-sockjs', 'tokio',
  'switchboard-redis', 'switchboard-redis-history', 'socketio-redis', 'socketio-redis-sharded',
];

const { out, run: runScript } = scriptRunner('bench-test', RUN_TIMEOUT_MS);
const runQuick = () => runScript(['benchmarks/run.mjs', '--quick', '--out', out]);

test('benchmarks/run.mjs --quick runs every scenario against every server', { timeout: RUN_TIMEOUT_MS + 60_000 }, async (t) => {
  const started = Date.now();
  const run = await runQuick();
  t.diagnostic(`quick run: exit ${run.code ?? run.signal} after ${Math.round((Date.now() - started) / 1000)} s`);
  const tail = run.output.split('\n').slice(-60).join('\n');
  assert.equal(run.code, 0, `the quick run failed:\n${tail}`);

  const results = JSON.parse(readFileSync(path.join(out, 'results.json'), 'utf8'));
  // First, so that a failing check below still leaves them in the output.
  for (const line of regressionSummary(results)) t.diagnostic(line);
  assert.equal(results.mode, 'quick');
  for (const key of ['cpu', 'kernel', 'node', 'rustc']) assert.ok(results.machine[key], `machine.${key} is recorded`);
  assert.equal(typeof results.pinning.pinned, 'boolean');
  assert.deepEqual(results.servers.map((s) => s.name).sort(), [...SERVERS].sort());

  for (const scenario of SCENARIOS) {
    for (const server of SERVERS) {
      const runs = results.runs.filter((r) => r.scenario === scenario && r.server === server);
      if (!runsScenario(serverByName(server), scenario)) {
        assert.equal(runs.length, 0, `${scenario} ${server}: runs it does not run`);
        continue;
      }
      assert.ok(runs.length > 0, `${scenario} ${server}: no run`);
      for (const r of runs) {
        const what = `${scenario} ${r.label} ${server}`;
        assert.equal(r.error, null, `${what}: ${r.error}`);
        assert.ok(r.steps.length > 0, `${what}: no step`);
        if (scenario === 'ws-idle') {
          const step = r.steps[0];
          assert.equal(step.connected, step.connections, `${what}: ${step.connected} of ${step.connections} connected`);
          assert.ok(step.idle?.bytes_per_connection > 0, `${what}: bytes_per_connection ${step.idle?.bytes_per_connection}`);
        } else {
          for (const step of r.steps) assert.ok(step.received > 0, `${what}: received ${step.received}`);
        }
      }
    }
  }

  // The summary covers both scenarios, and the run printed it last.
  const rows = regressionRows(results);
  for (const scenario of ['ws-idle', 'ws-echo']) {
    const row = rows.find((r) => r.scenario === scenario);
    assert.ok(row && row.ratio > 0, `the summary has a ${scenario} ratio: ${JSON.stringify(row)}`);
  }
  const summaryAt = run.output.lastIndexOf('Switchboard vs uWebSockets.js, idle memory and echo');
  assert.ok(summaryAt >= 0, 'the quick run prints the summary');
  assert.ok(!run.output.slice(summaryAt).includes('\nresults: '), 'the summary comes after the results paths');

  assert.ok(existsSync(path.join(out, 'results.md')), 'results.md is written');
  const md = readFileSync(path.join(out, 'results.md'), 'utf8');
  for (const scenario of SCENARIOS) assert.match(md, new RegExp(`## ${scenario}`), `results.md has a ${scenario} section`);
  const svgs = readdirSync(out).filter((f) => f.endsWith('.svg'));
  assert.ok(svgs.length > 0, 'at least one SVG chart');
  for (const f of svgs) {
    const svg = readFileSync(path.join(out, f), 'utf8');
    assert.match(svg, /^<\?xml[^>]*>\s*<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/, `${f} is an SVG document`);
    assert.match(svg, /<\/svg>\s*$/, `${f} is complete`);
  }
});
