#!/usr/bin/env node
// What a publish costs through the broker, plain and with history
// (docs/scale-out.md, "History and recovery"): one Switchboard server on a
// real redis-server publishes COUNT messages as fast as its broker takes
// them, and the run measures the publishes per second Redis ran and the
// CPU time Redis spent per publish. The issue's target: a publish with
// history costs at most 3x a plain one (Centrifugo reports about 17x).
//
//   node benchmarks/broker/publish-cost.mjs [--count 200000] [--size 100] [--rounds 3] [--out DIR]
//
// Plain and history rounds alternate (A/B interleaved: this machine is
// noisy), each on a fresh Redis, and the medians are reported. No
// subscriber: the cost measured is the publish's own (the fan-out is the
// cross-node scenario's).
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Server } from 'switchboard';
import { cpuSeconds, startRedis } from '../harness/topology.mjs';

const { values } = parseArgs({
  options: {
    count: { type: 'string', default: '200000' },
    size: { type: 'string', default: '100' },
    rounds: { type: 'string', default: '3' },
    out: { type: 'string' },
  },
});
const COUNT = Number(values.count);
const SIZE = Number(values.size);
const ROUNDS = Number(values.rounds);
const CHANNEL = 'bench';
const payload = 'x'.repeat(SIZE);

/** One round: a fresh Redis and server, COUNT publishes, until Redis ran them all. */
async function round(history) {
  const redis = await startRedis({});
  const server = new Server({
    workers: 0,
    broker: {
      redis: redis.url,
      probeInterval: 0,
      // The queue holds the whole burst: the round measures Redis, not
      // the backlog limit.
      maxPendingPublishes: COUNT,
      ...(history ? { history: [{ channels: CHANNEL, size: 100, ttl: 300 }] } : {}),
    },
  });
  server.ws('/', {}); // a server needs a route; nobody connects
  await server.listen(0, '127.0.0.1');
  const cpuBefore = cpuSeconds(redis.pid);
  const publishesBefore = await publishesRun(redis.port, history);
  const started = process.hrtime.bigint();
  for (let i = 0; i < COUNT; ) {
    // As fast as the broker's queue takes them; a full queue (it should
    // not be) would throw ERR_BROKER_BACKLOG and stop the run.
    server.publish(CHANNEL, payload);
    i += 1;
    if (i % 1000 === 0) await new Promise((resolve) => setImmediate(resolve));
  }
  // Until Redis has run them all.
  while ((await publishesRun(redis.port, history)) - publishesBefore < COUNT) await new Promise((resolve) => setTimeout(resolve, 5));
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const cpu = cpuSeconds(redis.pid) - cpuBefore;
  await server.close();
  await redis.stop();
  return { perSecond: COUNT / seconds, redisMicrosPerPublish: (cpu * 1e6) / COUNT };
}

/**
 * How many publications Redis ran so far: PUBLISH commands (INFO
 * commandstats) for plain rounds; for history rounds the channel's last
 * offset, since a run of publications is one PUBLISH of a batch there.
 */
async function publishesRun(port, history) {
  if (history) return Number((await bulk(port, ['HGET', `switchboard:{${CHANNEL}}:meta`, 'o'])) ?? 0);
  const match = /cmdstat_publish:calls=(\d+)/.exec((await bulk(port, ['INFO', 'commandstats'])) ?? '');
  return match ? Number(match[1]) : 0;
}

/** One command whose answer is a bulk string, over a raw socket: its text, or null for a nil. */
async function bulk(port, args) {
  const net = await import('node:net');
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let reply = '';
    socket.on('error', reject);
    socket.on('data', (chunk) => {
      reply += chunk;
      if (reply.startsWith('$-1\r\n')) {
        socket.destroy();
        resolve(null);
        return;
      }
      // `$<length>\r\n<text>\r\n`.
      const header = /^\$(\d+)\r\n/.exec(reply);
      if (!header || reply.length < header[0].length + Number(header[1]) + 2) return;
      socket.destroy();
      resolve(reply.slice(header[0].length, header[0].length + Number(header[1])));
    });
    socket.write(`*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`);
  });
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const results = { plain: [], history: [] };
for (let r = 0; r < ROUNDS; r++) {
  for (const kind of ['plain', 'history']) {
    const result = await round(kind === 'history');
    results[kind].push(result);
    console.error(`round ${r + 1} ${kind}: ${Math.round(result.perSecond)} publishes/s, Redis ${result.redisMicrosPerPublish.toFixed(2)} µs CPU each`);
  }
}
const summary = {};
for (const kind of ['plain', 'history']) {
  summary[kind] = {
    perSecond: median(results[kind].map((x) => x.perSecond)),
    redisMicrosPerPublish: median(results[kind].map((x) => x.redisMicrosPerPublish)),
  };
}
const costRatio = summary.history.redisMicrosPerPublish / summary.plain.redisMicrosPerPublish;
const rateRatio = summary.plain.perSecond / summary.history.perSecond;
const lines = [
  '# Publish cost through the broker, plain and with history',
  '',
  `${COUNT} publishes of ${SIZE} bytes per round, ${ROUNDS} rounds of each, interleaved; medians. Command: \`node benchmarks/broker/publish-cost.mjs --count ${COUNT} --size ${SIZE} --rounds ${ROUNDS}\`.`,
  '',
  '| | publishes/s (Redis ran them) | Redis CPU per publish |',
  '|---|---:|---:|',
  `| plain (\`PUBLISH\`) | ${Math.round(summary.plain.perSecond).toLocaleString('en')} | ${summary.plain.redisMicrosPerPublish.toFixed(2)} µs |`,
  `| history (append script: a run of publications as one batch, \`XADD\` + meta + \`PUBLISH\`) | ${Math.round(summary.history.perSecond).toLocaleString('en')} | ${summary.history.redisMicrosPerPublish.toFixed(2)} µs |`,
  '',
  `A publish with history costs **${costRatio.toFixed(2)}x** a plain one in Redis CPU (${rateRatio.toFixed(2)}x in throughput). Target: at most 3x; Centrifugo reports about 17x for its history publishes.`,
  '',
];
console.log(lines.join('\n'));
if (values.out) {
  mkdirSync(values.out, { recursive: true });
  writeFileSync(path.join(values.out, 'results.md'), lines.join('\n'));
  writeFileSync(path.join(values.out, 'results.json'), JSON.stringify({ count: COUNT, size: SIZE, rounds: ROUNDS, results, summary, costRatio, rateRatio }, null, 2));
}
