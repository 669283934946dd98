// A real nats-server for the scale-out tests: installed by the project's
// own setup script (Debian's package, once per test process), started on a
// free port of 127.0.0.1 with its monitoring endpoint on another, stopped
// (and restartable on the same ports) by the test.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
let binary = null;

/** Runs scripts/setup-nats.sh (a no-op once nats-server is there); its path. */
export function ensureNats() {
  if (binary) return binary;
  const setup = spawnSync('bash', [path.join(root, 'scripts', 'setup-nats.sh')], {
    cwd: root,
    encoding: 'utf8',
    timeout: 10 * 60_000,
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
  assert.equal(setup.status, 0, `scripts/setup-nats.sh failed:\n${setup.stdout}\n${setup.stderr}${setup.error ?? ''}`);
  const found = spawnSync('sh', ['-c', 'command -v nats-server'], { encoding: 'utf8' }).stdout.trim();
  binary = found || (existsSync('/usr/sbin/nats-server') ? '/usr/sbin/nats-server' : 'nats-server');
  return binary;
}

/** A port nobody listens on right now. */
async function freePort() {
  const probe = net.createServer();
  await new Promise((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address();
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

export class NatsServer {
  constructor(port, monitor) {
    this.port = port;
    this.monitor = monitor;
    this.url = `nats://127.0.0.1:${port}`;
    this.process = null;
  }

  /** Start (or start again, on the same ports) and wait until it answers. */
  async start() {
    this.process = spawn(ensureNats(), ['-a', '127.0.0.1', '-p', String(this.port), '-m', String(this.monitor)], { stdio: 'ignore' });
    const deadline = Date.now() + 10_000;
    for (;;) {
      try {
        if ((await this.monitoring('healthz')).status === 'ok') return;
      } catch {}
      assert.ok(Date.now() < deadline, `nats-server did not answer on port ${this.port}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** Stop it (SIGKILL: a crash, not a goodbye) and wait for the exit. */
  async stop() {
    const child = this.process;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    this.process = null;
  }

  /** One monitoring endpoint (`varz`, `connz?subs=1`, `subsz?subs=1`...), parsed. */
  async monitoring(endpoint) {
    const response = await fetch(`http://127.0.0.1:${this.monitor}/${endpoint}`, { signal: AbortSignal.timeout(5000) });
    return response.json();
  }

  /** Every client's subscriptions, as `{ [connection name and id]: subjects[] }`. */
  async subscriptions() {
    const { connections = [] } = await this.monitoring('connz?subs=1');
    const out = {};
    for (const c of connections) out[`${c.name ?? ''}#${c.cid}`] = [...(c.subscriptions_list ?? [])].sort();
    return out;
  }

  /** How many clients subscribe `subject` exactly. */
  async numsub(subject) {
    return Object.values(await this.subscriptions()).filter((subjects) => subjects.includes(subject)).length;
  }
}

/** Install if needed, start a nats-server on free ports; `t.after` stops it. */
export async function startNats(t) {
  ensureNats();
  const nats = new NatsServer(await freePort(), await freePort());
  await nats.start();
  t.after(() => nats.stop());
  return nats;
}
