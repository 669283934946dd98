// The cross-node scenario's servers (SCENARIOS.md, "cross-node"): a
// redis-server of its own on a free loopback port, node A (where the
// publishers connect) and node B (where the subscribers connect), both the
// peer's script with REDIS_URL pointing at that Redis. Everything is started
// fresh for a run and stopped after it, like a single server.
//
// Pinning, on a machine of two cores: B, the node whose fan-out is measured,
// alone on the server's core; A and Redis on the load generator's core. A
// and Redis carry one message per publish (a few thousand a second at the
// saturation of N = 1,000 subscribers) while B delivers N per publish, so
// B's core is the one that decides the figure; the load generator gives up
// some of its core to them, which the saturation check shows.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { allowedCpus, pinned } from './machine.mjs';
import { startServer } from './servers.mjs';

/** A port nobody listens on right now (Redis takes it a moment later). */
async function freePort() {
  const probe = net.createServer();
  await new Promise((resolve, reject) => {
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', resolve);
  });
  const { port } = probe.address();
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** Whether a Redis answers PING on `port` (one RESP round trip, no client library). */
function ping(port) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let reply = '';
    const done = (ok) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.on('error', () => done(false));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      reply += chunk;
      if (reply.includes('\r\n')) done(reply.startsWith('+PONG'));
    });
  });
}

/** The CPU seconds (user + system) of a process so far, or null once it is gone. */
export function cpuSeconds(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command (which may hold spaces): utime is the 14th field, stime the 15th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return null;
  }
}

/**
 * redis-server on a free port of 127.0.0.1, persistence off, in a temp
 * directory; resolves once it answers PING. `cpu`: where to pin it.
 */
export async function startRedis({ cpu, timeoutMs = 10_000 }) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'switchboard-bench-redis-'));
  const port = await freePort();
  const { command, args } = pinned(cpu, 'redis-server', [
    '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no',
    '--dir', dir, '--loglevel', 'warning',
  ]);
  const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let tail = '';
  child.stderr.on('data', (c) => (tail = (tail + c).slice(-4000)));
  let exited = null;
  const exitPromise = new Promise((resolve) => child.on('exit', (code, signal) => resolve((exited = { code, signal }))));
  child.on('error', (err) => (tail += `cannot start ${command}: ${err.message}`));
  const stop = async () => {
    if (!exited) {
      child.kill('SIGKILL');
      await exitPromise;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + timeoutMs;
  while (!(await ping(port))) {
    if (exited || Date.now() > deadline) {
      await stop();
      throw new Error(`redis-server did not answer on port ${port}${tail ? `: ${tail.trim()}` : ''} (is it installed? bash scripts/setup-redis.sh)`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    pid: child.pid,
    port,
    url: `redis://127.0.0.1:${port}`,
    command: [command, ...args].join(' '),
    cpus: allowedCpus(child.pid),
    running: () => exited === null,
    exited: exitPromise.then((e) => ({ ...e, which: 'redis-server' })),
    output: () => tail,
    stop,
  };
}

/**
 * Start `server`'s topology: Redis, then node A (publishers) and node B
 * (subscribers). Resolves a handle shaped like startServer's (B's pid,
 * port and CPUs: B is "the server" whose CPU the load generator reads),
 * plus `loadgenArgs` (A's port for `--publish-port`), `topology` (what the
 * results record of A and Redis) and `cpuSeconds()` (A's and Redis's CPU
 * so far, for the run's record).
 */
export async function startTopology(server, { root, binDir, cpu, sideCpu, env = {} }) {
  const redis = await startRedis({ cpu: sideCpu });
  const nodes = [];
  try {
    const nodeEnv = { ...env, REDIS_URL: redis.url };
    nodes.push(await startServer(server, { root, binDir, cpu: sideCpu, env: nodeEnv }));
    nodes.push(await startServer(server, { root, binDir, cpu, env: nodeEnv }));
  } catch (err) {
    for (const n of nodes) await n.stop();
    await redis.stop();
    throw err;
  }
  const [a, b] = nodes;
  const parts = [
    { which: 'node B (subscribers)', handle: b },
    { which: 'node A (publishers)', handle: a },
    { which: 'redis-server', handle: redis },
  ];
  return {
    pid: b.pid,
    port: b.port,
    command: b.command,
    cpus: b.cpus,
    loadgenArgs: ['--publish-port', String(a.port)],
    topology: {
      publisher: { pid: a.pid, port: a.port, command: a.command, cpus_allowed: a.cpus },
      redis: { pid: redis.pid, port: redis.port, command: redis.command, cpus_allowed: redis.cpus },
    },
    cpuSeconds: () => ({ publisher: cpuSeconds(a.pid), redis: cpuSeconds(redis.pid) }),
    running: () => parts.every((p) => p.handle.running()),
    output: () =>
      parts
        .map((p) => (p.handle.output().trim() ? `--- ${p.which}:\n${p.handle.output().trim()}` : ''))
        .filter(Boolean)
        .join('\n'),
    // The first of the three to exit (the caller asks only once one has).
    exited: Promise.race(parts.map((p) => p.handle.exited.then((e) => ({ which: p.which, ...e })))),
    async stop() {
      // B and A first (a node's goodbye to Redis is bounded by its connectTimeout), then Redis.
      const results = await Promise.all([b.stop(), a.stop()]);
      await redis.stop();
      return results[0];
    },
  };
}
