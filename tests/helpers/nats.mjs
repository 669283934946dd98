// A real nats-server for the scale-out tests: installed by the project's
// own setup script (Debian's package, once per test process), started on a
// free port of 127.0.0.1 with its monitoring endpoint on another, stopped
// (and restartable on the same ports) by the test.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { freePort, kill, runSetup, spawnAnswering } from './service.mjs';

let binary = null;

/** Runs scripts/setup-nats.sh (a no-op once nats-server is there); its path. */
export function ensureNats() {
  if (binary) return binary;
  runSetup('setup-nats.sh');
  const found = spawnSync('sh', ['-c', 'command -v nats-server'], { encoding: 'utf8' }).stdout.trim();
  binary = found || (existsSync('/usr/sbin/nats-server') ? '/usr/sbin/nats-server' : 'nats-server');
  return binary;
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
    this.process = await spawnAnswering(ensureNats(), ['-a', '127.0.0.1', '-p', String(this.port), '-m', String(this.monitor)], {
      name: 'nats-server',
      port: this.port,
      answers: async () => (await this.monitoring('healthz')).status === 'ok',
    });
  }

  /** Stop it (SIGKILL: a crash, not a goodbye) and wait for the exit. */
  async stop() {
    await kill(this.process);
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
