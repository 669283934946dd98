// A first, rough throughput figure for the echo and broadcast examples,
// driven by Node `ws` clients in one process. It is NOT the benchmark suite
// (issue: a native load generator, peers side by side, ratios): a Node
// client saturates long before the server does, so these numbers are a
// floor for the server, not its capacity. It reports the client's and the
// server's CPU time so you can see which side was the bottleneck.
//
//   node benchmarks/quick-load.mjs echo [connections=50] [inFlight=16] [seconds=5] [bytes=32]
//   node benchmarks/quick-load.mjs broadcast [connections=100] [ratePerClient=20] [seconds=5] [bytes=32]
//   node benchmarks/quick-load.mjs idle [connections=10000]
//
// `idle` opens connections that send nothing (to the echo example) and
// reports the server's resident memory per connection.
// Environment: WORKERS (server worker threads, default 1).
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const [mode = 'echo', a, b, c, d] = process.argv.slice(2);
const connections = Number(a ?? (mode === 'echo' ? 50 : 100));
const param = Number(b ?? (mode === 'echo' ? 16 : 20));
const seconds = Number(c ?? 5);
const bytes = Number(d ?? 32);

function cpuSeconds(pid) {
  // utime + stime, fields 14 and 15 of /proc/<pid>/stat, in clock ticks (100 Hz).
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

function rssBytes(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m[1]) * 1024;
}

const example = mode === 'idle' ? 'echo' : mode;
const server = spawn(process.execPath, [path.join(root, 'examples', example, 'server.mjs')], {
  env: { ...process.env, PORT: '0', WORKERS: process.env.WORKERS ?? '1' },
  stdio: ['ignore', 'pipe', 'inherit'],
});
const url = await new Promise((resolve, reject) => {
  let out = '';
  server.stdout.on('data', (chunk) => {
    out += chunk;
    const m = /ws:\/\/127\.0\.0\.1:\d+\//.exec(out);
    if (m) resolve(m[0]);
  });
  server.once('exit', () => reject(new Error(`server exited: ${out}`)));
});

if (mode === 'idle') {
  await new Promise((r) => setTimeout(r, 500));
  const before = rssBytes(server.pid);
  const idle = [];
  // Open in slices so the listen backlog never overflows.
  for (let i = 0; i < connections; i += 500) {
    const slice = Math.min(500, connections - i);
    idle.push(
      ...(await Promise.all(
        Array.from({ length: slice }, () => new Promise((resolve, reject) => {
          const ws = new WebSocket(url, { perMessageDeflate: false });
          ws.once('open', () => resolve(ws));
          ws.once('error', reject);
        })),
      )),
    );
  }
  await new Promise((r) => setTimeout(r, 1000));
  const after = rssBytes(server.pid);
  console.log(
    JSON.stringify({
      mode,
      connections,
      workers: Number(process.env.WORKERS ?? 1),
      serverRssBeforeMiB: +(before / 2 ** 20).toFixed(1),
      serverRssAfterMiB: +(after / 2 ** 20).toFixed(1),
      bytesPerConnection: Math.round((after - before) / connections),
    }),
  );
  for (const ws of idle) ws.terminate();
  server.kill('SIGTERM');
  process.exit(0);
}

const payload = Buffer.alloc(bytes, 'x');
const clients = await Promise.all(
  Array.from({ length: connections }, () => new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  })),
);

let received = 0;
let running = true;
const timers = [];
for (const ws of clients) {
  ws.on('message', () => {
    received++;
    if (mode === 'echo' && running) ws.send(payload);
  });
  if (mode === 'echo') {
    for (let i = 0; i < param; i++) ws.send(payload);
  } else {
    timers.push(setInterval(() => running && ws.send(payload), 1000 / param));
  }
}

const serverCpu0 = cpuSeconds(server.pid);
const selfCpu0 = process.cpuUsage();
const received0 = received;
const started = performance.now();
await new Promise((r) => setTimeout(r, seconds * 1000));
const elapsed = (performance.now() - started) / 1000;
const count = received - received0;
const serverCpu = cpuSeconds(server.pid) - serverCpu0;
const self = process.cpuUsage(selfCpu0);
running = false;
timers.forEach(clearInterval);

console.log(
  JSON.stringify({
    mode,
    connections,
    [mode === 'echo' ? 'inFlight' : 'ratePerClient']: param,
    bytes,
    workers: Number(process.env.WORKERS ?? 1),
    messagesPerSecond: Math.round(count / elapsed),
    serverCpuSecondsPerSecond: +(serverCpu / elapsed).toFixed(2),
    clientCpuSecondsPerSecond: +((self.user + self.system) / 1e6 / elapsed).toFixed(2),
  }),
);
for (const ws of clients) ws.terminate();
server.kill('SIGTERM');
