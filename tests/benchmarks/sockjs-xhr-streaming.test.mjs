// The load generator speaks SockJS's xhr-streaming transport: against the
// sockjs-node peer (benchmarks/peers/sockjs.mjs, which serves xhr_streaming
// and xhr_send on its prefixes, with sockjs-node's 128 KiB response limit)
// and against Switchboard's SockJS services (the same prefixes, the same
// limit), it opens every session, counts each message of every `a[...]`
// frame, keeps counting across the streaming responses the server ends at
// its limit, and carries its own messages in xhr_send batches. Then the
// runner runs ws-broadcast-room and ws-idle over the transport, both
// servers side by side, and reports them with their ratio. Bounded: a few
// seconds of load per server. Asserts counts and error-free runs, never a
// speed.
//
// Run: node --test tests/benchmarks/sockjs-xhr-streaming.test.mjs
// Env: CARGO_TARGET_DIR / SB_CACHE as for scripts/run.mjs (the load
//      generator is built there).
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { runLoadgen } from '../../benchmarks/harness/loadgen.mjs';
import { loadgenBinary, prepare } from '../../benchmarks/harness/prepare.mjs';
import { serverByName, startServer } from '../../benchmarks/harness/servers.mjs';
import { root, scriptRunner } from './run-script.mjs';

// The load takes seconds; the first build of the load generator (and the
// first `npm ci` of the peers) takes longer.
const BUILD_TIMEOUT_MS = 10 * 60_000;
const RUN_TIMEOUT_MS = 60_000;

const SERVERS = [serverByName('sockjs-xhr-streaming'), serverByName('switchboard-sockjs-xhr-streaming')];
let binary = null;

before(async () => {
  prepare({ root, servers: SERVERS, log: () => {} });
  binary = loadgenBinary();
}, { timeout: BUILD_TIMEOUT_MS });

for (const peer of SERVERS) {
  describe(peer.label, () => {
    let server = null;

    before(async () => {
      server = await startServer(peer, { root, binDir: null, cpu: null });
    }, { timeout: BUILD_TIMEOUT_MS });

    after(async () => {
      await server?.stop();
    });

    /** One load generator run against the server; its single step or the steps of a room run. */
    async function drive(args) {
      const run = await runLoadgen({
        binary,
        cpu: null,
        port: server.port,
        protocol: peer.protocol,
        serverPid: server.pid,
        args,
        timeoutMs: RUN_TIMEOUT_MS,
      });
      assert.equal(run.code, 0, `the load generator failed (${run.code ?? run.signal}):\n${run.stderr}`);
      assert.ok(run.steps.length > 0, 'it printed a step');
      for (const step of run.steps) {
        assert.equal(step.protocol, 'sockjs-xhr-streaming');
        assert.equal(step.connected, step.connections, 'every session open to the end');
        assert.deepEqual(step.errors, { connect: 0, closed: 0, protocol: 0, backlogged: 0 }, 'no errors');
        assert.ok(step.xhr_streaming, 'the transport figures are reported');
      }
      return run.steps;
    }

    test('a room over xhr-streaming: every message delivered to every session, across response limits', { timeout: RUN_TIMEOUT_MS }, async () => {
      // 10 sessions, 2,000 messages/s in all, each delivered to all 10: a
      // session receives about 2,000 messages (some 70 KB) a second, so
      // each streaming response reaches the 128 KiB limit within the 2.5 s
      // and the session goes on in a new one.
      const [step] = await drive([
        '--scenario', 'room', '--connections', '10', '--rates', '2000', '--payload', '32', '--warmup', '0.5', '--duration', '2',
      ]);
      assert.ok(step.sent > 2000, `sent ${step.sent}`);
      // Each message is counted once per session (a message per a[...]
      // entry, not per frame). The window's edges cut messages in flight:
      // those sent in the warm-up and received in the window, and those
      // sent at its end and received after it. On a loaded machine that
      // is a few hundred milliseconds of traffic, so the bounds are wide;
      // counting frames instead of messages, or a message twice, still
      // falls far outside them.
      const perMessage = step.received / step.sent;
      assert.ok(perMessage > 7 && perMessage < 13, `received ${step.received} for ${step.sent} sent to 10 sessions`);
      assert.equal(step.latency_us.count, step.received, 'a latency per message, from its stamp');
      assert.ok(step.latency_us.p50 > 0 && step.latency_us.p50 <= step.latency_us.max);
      const x = step.xhr_streaming;
      assert.ok(x.streams_ended >= 1, `streaming responses ended at the limit and reopened: ${JSON.stringify(x)}`);
      assert.ok(x.send_requests > 0 && x.send_retries === 0, `xhr_send: ${JSON.stringify(x)}`);
    });

    test('echo over xhr-streaming: each session gets its own messages back, batched into its sends', { timeout: RUN_TIMEOUT_MS }, async () => {
      const [step] = await drive(['--scenario', 'echo', '--connections', '10', '--in-flight', '4', '--warmup', '0.3', '--duration', '1']);
      assert.ok(step.received > 100, `echoed ${step.received}`);
      // Closed loop: every echo sends the next, so the window's sends and
      // echoes differ by at most the messages in flight.
      assert.ok(Math.abs(step.sent - step.received) <= 10 * 4, `sent ${step.sent}, received ${step.received}`);
      assert.ok(step.xhr_streaming.messages_per_send >= 1, JSON.stringify(step.xhr_streaming));
    });

    test('idle xhr-streaming sessions: memory per session, no send connection', { timeout: RUN_TIMEOUT_MS }, async () => {
      const [step] = await drive(['--scenario', 'idle', '--connections', '200', '--settle', '0.3']);
      assert.ok(step.idle && Number.isFinite(step.idle.bytes_per_connection), JSON.stringify(step.idle));
      assert.equal(step.xhr_streaming.send_connects, 0);
    });
  });
}

const { out, runChecked } = scriptRunner('xhr-streaming-test', RUN_TIMEOUT_MS);

test('the runner runs and reports the room and idle scenarios over xhr-streaming', { timeout: RUN_TIMEOUT_MS + 10_000 }, (t) =>
  runChecked(
    t,
    'quick run',
    ['benchmarks/run.mjs', '--quick', '--no-build', '--scenario', 'ws-broadcast-room,ws-idle', '--server', 'switchboard-sockjs-xhr-streaming,sockjs-xhr-streaming', '--out', out],
    20,
    () => {
      const results = JSON.parse(readFileSync(path.join(out, 'results.json'), 'utf8'));
      assert.deepEqual(
        results.servers.map((s) => [s.name, s.protocol]).sort(),
        [['sockjs-xhr-streaming', 'sockjs-xhr-streaming'], ['switchboard-sockjs-xhr-streaming', 'sockjs-xhr-streaming']],
      );
      assert.deepEqual(
        results.runs.map((r) => [r.scenario, r.server, r.error]).sort(),
        [
          ['ws-broadcast-room', 'sockjs-xhr-streaming', null],
          ['ws-broadcast-room', 'switchboard-sockjs-xhr-streaming', null],
          ['ws-idle', 'sockjs-xhr-streaming', null],
          ['ws-idle', 'switchboard-sockjs-xhr-streaming', null],
        ],
      );
      for (const run of results.runs.filter((r) => r.scenario === 'ws-broadcast-room')) {
        for (const step of run.steps) assert.ok(step.received > 0, `${run.server}: room step at ${step.rate}/s received ${step.received}`);
      }
      for (const run of results.runs.filter((r) => r.scenario === 'ws-idle')) assert.ok(run.summary.bytes_per_connection > 0);
      const md = readFileSync(path.join(out, 'results.md'), 'utf8');
      assert.match(md, /\| Clients \(N\) \| SockJS xhr \| SB SockJS xhr \| SB SockJS xhr vs SockJS xhr \|/);
      assert.ok(existsSync(path.join(out, 'room-n50.svg')));
    },
  ));
