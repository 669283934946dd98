// The cross-node scenario's harness: for Switchboard's broker and both of
// Socket.IO's Redis adapters, the topology (a redis-server of its own, node
// A for the publishers, node B for the subscribers) starts, the load
// generator's fanout puts the publishers on A's /publish and the
// subscribers on B's /room, every publish reaches every subscriber through
// Redis, and stopping the topology stops Redis too. Bounded: about a
// second of load per server. Asserts counts, never a speed.
//
// Run: node --test tests/benchmarks/cross-node.test.mjs
// Env: CARGO_TARGET_DIR / SB_CACHE as for scripts/run.mjs (the load
//      generator is built there).
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { runLoadgen } from '../../benchmarks/harness/loadgen.mjs';
import { loadgenBinary, prepare } from '../../benchmarks/harness/prepare.mjs';
import { serverByName } from '../../benchmarks/harness/servers.mjs';
import { startTopology } from '../../benchmarks/harness/topology.mjs';
import { root } from './run-script.mjs';

// The first build of the load generator (and `npm ci` of the peers) takes longer than the load.
const BUILD_TIMEOUT_MS = 10 * 60_000;
const RUN_TIMEOUT_MS = 60_000;

const SERVERS = ['switchboard-redis', 'socketio-redis', 'socketio-redis-sharded'].map(serverByName);
const SUBSCRIBERS = 20;
const PUBLISHERS = 2;
const RATE = 200;

let binary = null;

before(async () => {
  prepare({ root, servers: SERVERS, log: () => {} });
  binary = loadgenBinary();
}, { timeout: BUILD_TIMEOUT_MS });

for (const peer of SERVERS) {
  describe(peer.label, () => {
    let topology = null;

    before(async () => {
      topology = await startTopology(peer, { root, binDir: null, cpu: null, sideCpu: null });
    }, { timeout: 60_000 });

    after(async () => {
      await topology?.stop();
    });

    test('publishes on node A reach every subscriber on node B through Redis', { timeout: RUN_TIMEOUT_MS }, async () => {
      assert.notEqual(topology.topology.publisher.port, topology.port, 'two nodes');
      const run = await runLoadgen({
        binary,
        cpu: null,
        port: topology.port,
        protocol: peer.protocol,
        serverPid: topology.pid,
        args: [
          '--scenario', 'fanout', '--connections', String(SUBSCRIBERS), '--publishers', String(PUBLISHERS),
          '--rates', String(RATE), '--warmup', '0.5', '--duration', '1', ...topology.loadgenArgs,
        ],
        timeoutMs: RUN_TIMEOUT_MS,
      });
      assert.equal(run.code, 0, `the load generator failed (${run.code ?? run.signal}):\n${run.stderr}`);
      const [step] = run.steps;
      assert.equal(step.scenario, 'fanout');
      assert.equal(step.connections, SUBSCRIBERS + PUBLISHERS);
      assert.equal(step.connected, step.connections, 'every client open to the end');
      assert.deepEqual(step.errors, { connect: 0, closed: 0, protocol: 0, backlogged: 0 }, 'no errors');
      assert.ok(step.sent >= RATE * 0.9, `sent ${step.sent}`);
      // Every publish of the window reaches all subscribers; only those still
      // on their way at its edges may be counted in a neighbouring window.
      const expected = step.sent * SUBSCRIBERS;
      assert.ok(Math.abs(step.received - expected) <= 20 * SUBSCRIBERS, `received ${step.received}, expected about ${expected}`);
      assert.ok(step.latency_us.count > 0 && step.latency_us.p99 > 0, 'latency measured');
      assert.equal(step.server.pid, topology.pid, "node B's CPU is the server's");
      const side = topology.cpuSeconds();
      assert.ok(side.publisher !== null && side.redis !== null, 'node A and Redis are running');
    });

    test('stopping the topology stops its Redis', { timeout: 30_000 }, async () => {
      const redisPid = topology.topology.redis.pid;
      await topology.stop();
      topology = null;
      assert.ok(!existsSync(`/proc/${redisPid}`), 'redis-server has exited');
    });
  });
}
